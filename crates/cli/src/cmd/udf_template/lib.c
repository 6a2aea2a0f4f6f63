/* {{name}}: user-defined functions for anduin, in C, built to WebAssembly by clang
 * (`./build.sh`; see README.md).
 *
 * anduin calls each exported function once per row (docs/sql.md, "The calling convention"):
 * BIGINT is int64_t, DOUBLE is double, BOOLEAN is int32_t (0 or 1); a VARCHAR argument is a
 * pointer and a length of UTF-8 bytes in this module's memory, a VARCHAR result
 * `(uint64_t)pointer << 32 | length`. A NULL argument gives NULL without a call. A module
 * with VARCHAR functions exports `alloc` and `dealloc` (below). The module imports nothing:
 * no libc, no WASI (anduin refuses a module that imports anything).
 *
 * Each function is declared to anduin by a line of functions.txt, which build.sh adds to the
 * module as its `anduin:functions` section. */

#include <stdint.h>

#define EXPORT(name) __attribute__((export_name(#name)))

/* add_one(BIGINT) -> BIGINT */
EXPORT(add_one) int64_t add_one(int64_t x) { return x + 1; }

/* Room for strings: a stack allocator over the memory after the module's data. anduin
 * allocates room for each argument, calls the function, then gives back the result and the
 * arguments, latest first. */
extern unsigned char __heap_base;
static uintptr_t top = (uintptr_t)&__heap_base;

EXPORT(alloc) uint32_t alloc(uint32_t n) {
  uintptr_t p = top;
  uintptr_t end = p + n;
  uintptr_t have = __builtin_wasm_memory_size(0) << 16;
  if (end > have) {
    uintptr_t pages = (end - have + 65535) >> 16;
    if (__builtin_wasm_memory_grow(0, pages) == (uintptr_t)-1) __builtin_trap();
  }
  top = end;
  return (uint32_t)p;
}

EXPORT(dealloc) void dealloc(uint32_t p, uint32_t n) {
  if (p + n == top) top = p;
}

/* shout(VARCHAR) -> VARCHAR: ASCII letters upper-cased, and `!` appended. */
EXPORT(shout) uint64_t shout(const unsigned char *s, uint32_t n) {
  unsigned char *out = (unsigned char *)(uintptr_t)alloc(n + 1);
  for (uint32_t i = 0; i < n; i++) {
    unsigned char c = s[i];
    out[i] = (c >= 'a' && c <= 'z') ? (unsigned char)(c - 'a' + 'A') : c;
  }
  out[n] = '!';
  return ((uint64_t)(uintptr_t)out << 32) | (uint64_t)(n + 1);
}
