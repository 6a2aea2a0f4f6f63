;; shout(VARCHAR) -> VARCHAR: ASCII letters upper-cased and `!` appended, through the string
;; ABI: the module's `memory`, `alloc` and `dealloc` (a stack allocator), arguments as
;; (ptr, len), the result as ptr << 32 | len.
(module
  (memory (export "memory") 1)
  (global $top (mut i32) (i32.const 1024))
  (func $alloc (export "alloc") (param $n i32) (result i32)
    (local $p i32)
    global.get $top
    local.set $p
    global.get $top
    local.get $n
    i32.add
    global.set $top
    (block $ok
      global.get $top
      memory.size
      i32.const 16
      i32.shl
      i32.le_u
      br_if $ok
      ;; grow by the pages missing
      global.get $top
      memory.size
      i32.const 16
      i32.shl
      i32.sub
      i32.const 65535
      i32.add
      i32.const 16
      i32.shr_u
      memory.grow
      i32.const -1
      i32.ne
      br_if $ok
      unreachable)
    local.get $p)
  (func (export "dealloc") (param $p i32) (param $n i32)
    local.get $p
    local.get $n
    i32.add
    global.get $top
    i32.eq
    if
      local.get $p
      global.set $top
    end)
  (func (export "shout") (param $p i32) (param $n i32) (result i64)
    (local $out i32) (local $i i32) (local $c i32)
    local.get $n
    i32.const 1
    i32.add
    call $alloc
    local.set $out
    (block $done
      (loop $next
        local.get $i
        local.get $n
        i32.ge_u
        br_if $done
        local.get $p
        local.get $i
        i32.add
        i32.load8_u
        local.set $c
        local.get $c
        i32.const 97
        i32.ge_u
        local.get $c
        i32.const 122
        i32.le_u
        i32.and
        if
          local.get $c
          i32.const 32
          i32.sub
          local.set $c
        end
        local.get $out
        local.get $i
        i32.add
        local.get $c
        i32.store8
        local.get $i
        i32.const 1
        i32.add
        local.set $i
        br $next))
    local.get $out
    local.get $n
    i32.add
    i32.const 33
    i32.store8
    local.get $out
    i64.extend_i32_u
    i64.const 32
    i64.shl
    local.get $n
    i32.const 1
    i32.add
    i64.extend_i32_u
    i64.or)
  (@custom "anduin:functions" "shout(VARCHAR) -> VARCHAR\n"))
