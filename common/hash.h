/* hash.h — content hashes and secret randomness (libsodium). */
#ifndef CR_HASH_H
#define CR_HASH_H

#include <stddef.h>
#include <stdint.h>

#define CR_HASH_HEX_LEN 32 /* 16-byte BLAKE2b, hex: plenty for cache keys */

typedef struct {
    unsigned char state[384]; /* crypto_generichash_state, opaque (its size is 384) */
} cr_hash_t;

/* Must be called once per process before any other function here; safe to
 * call again. Returns 0 or CR_E_* when libsodium cannot initialise. */
int cr_hash_global_init(void);

void cr_hash_init(cr_hash_t *h);
/* Adds len bytes, then the length itself, so ("ab","c") != ("a","bc"). */
void cr_hash_update(cr_hash_t *h, const void *data, size_t len);
void cr_hash_update_str(cr_hash_t *h, const char *s);
/* Writes CR_HASH_HEX_LEN hex digits and a NUL into out. */
void cr_hash_final_hex(cr_hash_t *h, char out[CR_HASH_HEX_LEN + 1]);

/* One-shot hash of a buffer into hex. */
void cr_hash_hex(const void *data, size_t len, char out[CR_HASH_HEX_LEN + 1]);

/* 64-bit hash of memory for input-unchanged checks (BLAKE2b, 8 bytes). */
uint64_t cr_hash64(const void *data, size_t len);

/* Fills buf with len bytes from the OS CSPRNG. */
void cr_random_bytes(void *buf, size_t len);

/* A random id: prefix + 12 hex digits, written into out (size >= strlen(prefix)+13). */
void cr_random_id(const char *prefix, char *out, size_t outlen);

#endif
