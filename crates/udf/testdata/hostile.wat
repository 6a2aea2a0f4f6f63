;; Functions that misbehave: spin loops forever, boom traps on 3, bomb grows its memory by
;; 2 GiB, narrow is an i32 function (declared BIGINT, it does not match).
(module
  (memory 1)
  (func (export "spin") (param i64) (result i64)
    (loop $forever
      br $forever)
    local.get 0)
  (func (export "boom") (param i64) (result i64)
    local.get 0
    i64.const 3
    i64.eq
    if
      unreachable
    end
    local.get 0)
  (func (export "bomb") (param i64) (result i64)
    i32.const 32768
    memory.grow
    drop
    local.get 0)
  (func (export "narrow") (param i32) (result i32)
    local.get 0)
  (@custom "anduin:functions" "spin(BIGINT) -> BIGINT\nboom(BIGINT) -> BIGINT\nbomb(BIGINT) -> BIGINT\n"))
