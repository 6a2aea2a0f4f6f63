;; add_one(BIGINT) -> BIGINT and half(DOUBLE) -> DOUBLE: the ABI's scalars.
(module
  (func (export "add_one") (param i64) (result i64)
    local.get 0
    i64.const 1
    i64.add)
  (func (export "half") (param f64) (result f64)
    local.get 0
    f64.const 0.5
    f64.mul)
  (@custom "anduin:functions" "add_one(BIGINT) -> BIGINT\nhalf(DOUBLE) -> DOUBLE\n"))
