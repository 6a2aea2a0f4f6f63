#!/bin/sh
# Builds {{name}}.wasm: src/{{name}}.c to WebAssembly with clang (and wasm-ld), then the
# declarations of functions.txt added as the module's `anduin:functions` section with
# llvm-objcopy. On Debian: apt-get install clang lld llvm.
set -eu
cd "$(dirname "$0")"
for tool in clang wasm-ld llvm-objcopy; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "build.sh: $tool is missing: on Debian, apt-get install clang lld llvm" >&2
    exit 1
  fi
done
mkdir -p build
clang --target=wasm32 -O2 -nostdlib -Wl,--no-entry -o build/{{name}}.code.wasm src/{{name}}.c
llvm-objcopy --add-section=anduin:functions=functions.txt build/{{name}}.code.wasm {{name}}.wasm
echo "built {{name}}.wasm: anduin run QUERY --udf $(pwd)/{{name}}.wasm"
