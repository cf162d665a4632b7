/* kit_cuda.h — what several CUDA red-team candidates share; make.sh puts it
 * between a candidate's header comment and its body (after the line that reads "body" in a comment), as kit.h
 * for the C ones. Nothing here imports a symbol the link audit refuses. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The executor's writable image: its own rw mappings and the anonymous one
 * right after them (the end of .bss). Calls fn on each [lo, hi). */
static void s_exe_rw(void (*fn)(uintptr_t, uintptr_t))
{
    char exe[512], line[700];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0)
        return;
    exe[k] = '\0';
    FILE *f = fopen("/proc/self/maps", "r");
    int after = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perm[8], path[600] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %599s", &lo, &hi, perm, path) < 3)
            continue;
        int mine = !strcmp(path, exe);
        if (perm[0] == 'r' && perm[1] == 'w' && (mine || (after && !path[0])))
            fn(lo, hi);
        after = mine;
    }
    if (f)
        fclose(f);
}
