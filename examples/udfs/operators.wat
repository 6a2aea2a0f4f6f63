;; Two WebAssembly operators with keyed state (called in FROM: `first_row(input => TABLE t
;; PARTITION BY k)`). Per key anduin keeps a state of `name_state_size()` bytes, between
;; batches and in checkpoints; a state of zero bytes only is no state.
;;
;; first_row(ts BIGINT, value BIGINT) -> TABLE(ts BIGINT, value BIGINT): keeps the earliest
;;   row of each key (of equal times, the first to come) and emits it once the watermark
;;   passes its time, then drops every later row of the key (keep-first deduplication). Its
;;   state is 32 bytes, { int64 ts; int64 value; int64 held; int64 emitted; }; its timer is
;;   the held row's time until it is emitted.
;; every_second(value BIGINT) -> TABLE(n BIGINT, total BIGINT): counts the rows of each key
;;   and adds up their values; every second row emits the count and the total so far. Its
;;   state is 16 bytes, { int64 n; int64 total; }; no timer.
;;
;; The ABI: for operator `name` the module exports name_state_size, name_init (optional:
;; zeros otherwise), name_process(state, args…) -> i64, and optionally name_timer(state) ->
;; i64 (i64::MIN: none) with name_on_timer(state, watermark) -> i64; `memory`, `alloc` and
;; `dealloc` (here a stack allocator) for the states of a batch. A call returns the rows it
;; emits as `pointer << 32 | count`: `count` rows at `pointer`, 8 bytes a column (here one
;; row at most, in the 16 bytes at 512).
;; The custom section declares them for `anduin run --udf operators.wat` and `.flow`; SQL
;; declares them with CREATE FUNCTION … RETURNS TABLE (…) LANGUAGE wasm AS 'operators.wat'.
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

  ;; first_row: { ts @0, value @8, held @16, emitted @24 }
  (func (export "first_row_state_size") (result i32)
    i32.const 32)
  (func (export "first_row_process") (param $s i32) (param $ts i64) (param $v i64) (result i64)
    (block $keep
      ;; emitted: every later row is dropped
      local.get $s
      i64.load offset=24
      i64.const 0
      i64.ne
      br_if $keep
      ;; a row held that is not later than this one: keep it
      local.get $s
      i64.load offset=16
      i64.const 0
      i64.ne
      local.get $s
      i64.load
      local.get $ts
      i64.le_s
      i32.and
      br_if $keep
      local.get $s
      local.get $ts
      i64.store
      local.get $s
      local.get $v
      i64.store offset=8
      local.get $s
      i64.const 1
      i64.store offset=16)
    i64.const 0)
  (func (export "first_row_timer") (param $s i32) (result i64)
    local.get $s
    i64.load offset=24
    i64.const 0
    i64.ne
    if
      i64.const 0x8000000000000000
      return
    end
    local.get $s
    i64.load)
  (func (export "first_row_on_timer") (param $s i32) (param $w i64) (result i64)
    ;; the row: ts, value at 512
    i32.const 512
    local.get $s
    i64.load
    i64.store
    i32.const 520
    local.get $s
    i64.load offset=8
    i64.store
    local.get $s
    i64.const 1
    i64.store offset=24
    ;; one row at 512
    i64.const 0x20000000001)

  ;; every_second: { n @0, total @8 }
  (func (export "every_second_state_size") (result i32)
    i32.const 16)
  (func (export "every_second_process") (param $s i32) (param $v i64) (result i64)
    local.get $s
    local.get $s
    i64.load
    i64.const 1
    i64.add
    i64.store
    local.get $s
    local.get $s
    i64.load offset=8
    local.get $v
    i64.add
    i64.store offset=8
    local.get $s
    i64.load
    i64.const 2
    i64.rem_s
    i64.const 0
    i64.ne
    if
      i64.const 0
      return
    end
    i32.const 512
    local.get $s
    i64.load
    i64.store
    i32.const 520
    local.get $s
    i64.load offset=8
    i64.store
    i64.const 0x20000000001)
  (@custom "anduin:operators" "first_row(ts BIGINT, value BIGINT) -> TABLE(ts BIGINT, value BIGINT)\nevery_second(value BIGINT) -> TABLE(n BIGINT, total BIGINT)"))
