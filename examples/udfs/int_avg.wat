;; int_avg(BIGINT) -> DOUBLE, a WebAssembly aggregate: its state is 16 bytes, a C struct
;; { int64 sum; int64 n; }, kept by anduin between batches and in checkpoints. The ABI: for
;; aggregate `int_avg` the module exports int_avg_state_size, int_avg_init, int_avg_accumulate,
;; int_avg_retract (optional), int_avg_merge (optional) and int_avg_finish, and `memory`, `alloc` and
;; `dealloc` (here a stack allocator), where anduin puts the states of a batch.
;; The custom section declares it for `anduin run --udf int_avg.wat` (a .flow window's
;; `aggregates = "int_avg(value) AS m"`); SQL declares it with CREATE AGGREGATE instead.
(module
  (memory (export "memory") 1)
  (global $top (mut i32) (i32.const 1024))
  (func (export "alloc") (param $n i32) (result i32)
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
  (func (export "int_avg_state_size") (result i32)
    i32.const 16)
  (func (export "int_avg_init") (param $s i32)
    local.get $s
    i64.const 0
    i64.store
    local.get $s
    i64.const 0
    i64.store offset=8)
  (func (export "int_avg_accumulate") (param $s i32) (param $x i64)
    local.get $s
    local.get $s
    i64.load
    local.get $x
    i64.add
    i64.store
    local.get $s
    local.get $s
    i64.load offset=8
    i64.const 1
    i64.add
    i64.store offset=8)
  (func (export "int_avg_retract") (param $s i32) (param $x i64)
    local.get $s
    local.get $s
    i64.load
    local.get $x
    i64.sub
    i64.store
    local.get $s
    local.get $s
    i64.load offset=8
    i64.const 1
    i64.sub
    i64.store offset=8)
  (func (export "int_avg_merge") (param $s i32) (param $o i32)
    local.get $s
    local.get $s
    i64.load
    local.get $o
    i64.load
    i64.add
    i64.store
    local.get $s
    local.get $s
    i64.load offset=8
    local.get $o
    i64.load offset=8
    i64.add
    i64.store offset=8)
  (func (export "int_avg_finish") (param $s i32) (result f64)
    local.get $s
    i64.load
    f64.convert_i64_s
    local.get $s
    i64.load offset=8
    f64.convert_i64_s
    f64.div)
  (@custom "anduin:aggregates" "int_avg(BIGINT) -> DOUBLE"))
