/* hash.c — see hash.h. */
#include "hash.h"

#include "error.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(crypto_generichash_state) <= sizeof(((cr_hash_t *)0)->state),
               "cr_hash_t too small for crypto_generichash_state");

int cr_hash_global_init(void)
{
    return sodium_init() < 0 ? CR_E_CHILD : 0;
}

void cr_hash_init(cr_hash_t *h)
{
    crypto_generichash_init((crypto_generichash_state *)h->state, NULL, 0, CR_HASH_HEX_LEN / 2);
}

void cr_hash_update(cr_hash_t *h, const void *data, size_t len)
{
    uint64_t n = len;
    crypto_generichash_update((crypto_generichash_state *)h->state, data, len);
    crypto_generichash_update((crypto_generichash_state *)h->state, (const void *)&n, sizeof n);
}

void cr_hash_update_str(cr_hash_t *h, const char *s)
{
    cr_hash_update(h, s ? s : "", s ? strlen(s) : 0);
}

void cr_hash_final_hex(cr_hash_t *h, char out[CR_HASH_HEX_LEN + 1])
{
    unsigned char raw[CR_HASH_HEX_LEN / 2];
    crypto_generichash_final((crypto_generichash_state *)h->state, raw, sizeof raw);
    sodium_bin2hex(out, CR_HASH_HEX_LEN + 1, raw, sizeof raw);
}

void cr_hash_hex(const void *data, size_t len, char out[CR_HASH_HEX_LEN + 1])
{
    cr_hash_t h;
    cr_hash_init(&h);
    cr_hash_update(&h, data, len);
    cr_hash_final_hex(&h, out);
}

uint64_t cr_hash64(const void *data, size_t len)
{
    uint64_t v = 0;
    crypto_generichash((unsigned char *)&v, sizeof v, data, len, NULL, 0);
    return v;
}

void cr_random_bytes(void *buf, size_t len)
{
    randombytes_buf(buf, len);
}

void cr_random_id(const char *prefix, char *out, size_t outlen)
{
    unsigned char raw[6];
    char hex[13];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(hex, sizeof hex, raw, sizeof raw);
    snprintf(out, outlen, "%s%s", prefix, hex);
}
