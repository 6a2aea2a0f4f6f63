//! The string ABI's side of a call: room for each string argument from the module's own
//! `alloc`, the bytes written there, the result read, and everything given back with
//! `dealloc`. What the module's allocator does wrong (a trap, room outside its memory, room
//! that overlaps another argument's) is [`UdfError::Allocator`]: the module's fault, found
//! before the function runs, never a wrong answer.

use wasmtime::{Memory, Store, TypedFunc};

use crate::limits::Limiter;
use crate::UdfError;

/// What a function that passes strings uses of its module.
pub(crate) struct Strings {
    pub memory: Memory,
    pub alloc: TypedFunc<i32, i32>,
    pub dealloc: TypedFunc<(i32, i32), ()>,
    /// The memory of the current call, `(ptr, len)`, to give back latest first.
    allocated: Vec<(i32, i32)>,
}

/// Why a string could not be passed.
pub(crate) enum Failed {
    /// A call into the module failed (a trap, fuel): classified by the caller, with what was
    /// being called.
    Wasm(wasmtime::Error, String),
    /// The module broke the ABI.
    Udf(UdfError),
}

/// Who the errors name.
pub(crate) struct Names<'a> {
    pub function: &'a str,
    pub module: &'a str,
}

impl Names<'_> {
    fn allocator(&self, call: String, problem: String) -> Failed {
        Failed::Udf(UdfError::Allocator {
            function: self.function.to_string(),
            module: self.module.to_string(),
            call,
            problem,
        })
    }
}

impl Strings {
    pub(crate) fn new(
        memory: Memory,
        alloc: TypedFunc<i32, i32>,
        dealloc: TypedFunc<(i32, i32), ()>,
    ) -> Self {
        Self {
            memory,
            alloc,
            dealloc,
            allocated: Vec::new(),
        }
    }

    /// Room for each of `strings` (the string arguments, in order), written there: their
    /// `(ptr, len)`. All are allocated before any is written, so that an allocator that
    /// writes into memory it gave out before is caught as an overlap, not left to garble an
    /// argument.
    pub(crate) fn pass(
        &mut self,
        store: &mut Store<Limiter>,
        names: &Names<'_>,
        strings: &[&str],
    ) -> Result<Vec<(i32, i32)>, Failed> {
        self.allocated.clear();
        for s in strings {
            let len = i32::try_from(s.len()).map_err(|_| {
                Failed::Udf(UdfError::Abi {
                    function: names.function.to_string(),
                    message: format!("a string of {} bytes is too long to pass", s.len()),
                })
            })?;
            let call = format!("alloc({len})");
            let ptr = self
                .alloc
                .call(&mut *store, len)
                .map_err(|e| Failed::Wasm(e, call.clone()))?;
            let size = self.memory.data_size(&*store);
            if let Some(problem) = misplaced(ptr, len, size, &self.allocated) {
                return Err(names.allocator(call, problem));
            }
            self.allocated.push((ptr, len));
        }
        for (s, (ptr, _)) in strings.iter().zip(&self.allocated) {
            self.memory
                .write(&mut *store, *ptr as u32 as usize, s.as_bytes())
                .map_err(|_| {
                    names.allocator(
                        format!("alloc({})", s.len()),
                        format!("returned {}, outside its memory", *ptr as u32),
                    )
                })?;
        }
        Ok(self.allocated.clone())
    }

    /// The UTF-8 string at `ptr`, `len` bytes long, that the function returned; it is given
    /// back with the arguments, unless it lies within an argument's room (a function that
    /// returns its argument, or a part of it): that room is given back once, as the
    /// argument's.
    pub(crate) fn result(
        &mut self,
        store: &Store<Limiter>,
        function: &str,
        ptr: u32,
        len: u32,
    ) -> Result<String, UdfError> {
        let abi = |message: String| UdfError::Abi {
            function: function.to_string(),
            message,
        };
        if !within_an_argument(ptr, len, &self.allocated) {
            self.allocated.push((ptr as i32, len as i32));
        }
        let data = self.memory.data(store);
        let bytes = data
            .get(ptr as usize..ptr as usize + len as usize)
            .ok_or_else(|| {
                abi(format!(
                    "its result ({len} bytes at {ptr}) lies outside its memory of {} bytes",
                    data.len()
                ))
            })?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| abi(format!("its result ({len} bytes at {ptr}) is not UTF-8")))
    }

    /// Gives back the memory of the call, latest first.
    pub(crate) fn give_back(&mut self, store: &mut Store<Limiter>) -> Result<(), Failed> {
        while let Some((ptr, len)) = self.allocated.pop() {
            self.dealloc
                .call(&mut *store, (ptr, len))
                .map_err(|e| Failed::Wasm(e, format!("dealloc({}, {len})", ptr as u32)))?;
        }
        Ok(())
    }
}

/// Whether a result of `len` bytes at `ptr` lies within the room of one of the arguments
/// `args` (`(ptr, len)`): the same room (an identity), or a part of it (a substring). An
/// empty result lies within a room that starts at or before it and ends after it, or is the
/// same empty room.
fn within_an_argument(ptr: u32, len: u32, args: &[(i32, i32)]) -> bool {
    let start = u64::from(ptr);
    let end = start + u64::from(len);
    args.iter().any(|(p, l)| {
        let (s, e) = (
            u64::from(*p as u32),
            u64::from(*p as u32) + u64::from(*l as u32),
        );
        (start, end) == (s, e) || (s <= start && end <= e && start < e)
    })
}

/// What is wrong with room of `len` bytes at `ptr` that `alloc` returned, in a memory of
/// `size` bytes where `before` (`(ptr, len)`) are still in use; `None` if nothing is.
fn misplaced(ptr: i32, len: i32, size: usize, before: &[(i32, i32)]) -> Option<String> {
    let start = u64::from(ptr as u32);
    let end = start + u64::from(len as u32);
    if end > size as u64 {
        return Some(format!(
            "returned {start}: its {len} bytes end at {end}, beyond its memory of {size} bytes"
        ));
    }
    if len == 0 {
        return None;
    }
    before.iter().enumerate().find_map(|(i, (p, l))| {
        let (s, e) = (u64::from(*p as u32), u64::from(*p as u32) + u64::from(*l as u32));
        (*l > 0 && start < e && s < end).then(|| {
            format!(
                "returned {start}: its {len} bytes overlap the {l} bytes at {s} it returned for string argument {} of the same call, not given back yet",
                i + 1
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::{misplaced, within_an_argument};

    #[test]
    fn a_result_in_an_arguments_room_is_that_argument() {
        let args = [(100, 10), (200, 0)];
        assert!(within_an_argument(100, 10, &args), "the identity");
        assert!(within_an_argument(102, 3, &args), "a substring");
        assert!(within_an_argument(100, 0, &args), "an empty start");
        assert!(within_an_argument(200, 0, &args), "the same empty room");
        assert!(!within_an_argument(110, 0, &args), "just past it");
        assert!(!within_an_argument(105, 10, &args), "running past it");
        assert!(!within_an_argument(300, 4, &args), "elsewhere");
    }

    #[test]
    fn room_must_lie_in_memory_and_apart_from_the_other_arguments() {
        let size = 65536;
        assert_eq!(
            misplaced(16, 4, size, &[(0, 16)]),
            None,
            "adjacent is apart"
        );
        assert_eq!(
            misplaced(0, 0, size, &[(0, 16)]),
            None,
            "empty overlaps nothing"
        );
        assert_eq!(misplaced(65532, 4, size, &[]), None, "up to the last byte");
        assert_eq!(
            misplaced(65533, 4, size, &[]).as_deref(),
            Some("returned 65533: its 4 bytes end at 65537, beyond its memory of 65536 bytes")
        );
        assert_eq!(
            misplaced(-8, 4, size, &[]).as_deref(),
            Some("returned 4294967288: its 4 bytes end at 4294967292, beyond its memory of 65536 bytes")
        );
        assert_eq!(
            misplaced(8, 4, size, &[(100, 2), (0, 10)]).as_deref(),
            Some("returned 8: its 4 bytes overlap the 10 bytes at 0 it returned for string argument 2 of the same call, not given back yet")
        );
        assert_eq!(
            misplaced(4, 4, size, &[(4, 0)]),
            None,
            "an empty argument holds nothing"
        );
    }
}
