//! What bounds an engine's calls: the fuel of the current call, which QuickJS's interrupt
//! handler spends; the engine's memory, which its allocator counts; and the order to stop,
//! which the calling thread's watchdog gives when a call outlives its wall-clock backstop or
//! the run stops.
//!
//! Every outcome is a flag set by the thing that caused it — the handler, the allocator, the
//! watchdog — so that a failed call is classified by what happened, never by the text of the
//! exception it left (a user's `throw new Error("out of memory")` is the user's).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rquickjs::allocator::{Allocator, RustAllocator};

/// Why the watchdog stopped a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Halt {
    /// It ran past its wall-clock backstop.
    Time,
    /// The run was asked to stop, and it ran past the grace it then gets.
    Stopping,
}

/// The bounds of one engine's current call, shared by the engine's thread (the interrupt
/// handler, the allocator) and the thread waiting for the call (the watchdog).
#[derive(Debug)]
pub(super) struct Meter {
    /// Interrupt checks left to the current call.
    left: AtomicU64,
    /// When the current call began, in nanoseconds after `epoch`.
    began: AtomicU64,
    epoch: Instant,
    /// 0, or why the watchdog stopped the engine ([`Halt`] as 1 or 2). Never cleared: an
    /// engine once stopped is abandoned.
    halt: AtomicU8,
    /// The interrupt handler stopped the current call: it had used its fuel.
    out_of_fuel: AtomicBool,
    /// The allocator refused the current call memory beyond the limit.
    out_of_memory: AtomicBool,
    /// Bytes the engine holds now.
    used: AtomicUsize,
    /// The most it may hold.
    limit: usize,
}

impl Meter {
    pub(super) fn new(limit: usize) -> Arc<Meter> {
        Arc::new(Meter {
            left: AtomicU64::new(0),
            began: AtomicU64::new(0),
            epoch: Instant::now(),
            halt: AtomicU8::new(0),
            out_of_fuel: AtomicBool::new(false),
            out_of_memory: AtomicBool::new(false),
            used: AtomicUsize::new(0),
            limit,
        })
    }

    /// A call begins, with `checks` interrupt checks of fuel.
    pub(super) fn begin(&self, checks: u64) {
        self.left.store(checks, Ordering::Relaxed);
        self.out_of_fuel.store(false, Ordering::Relaxed);
        self.out_of_memory.store(false, Ordering::Relaxed);
        let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.began.store(now, Ordering::Release);
    }

    /// When the current call began.
    pub(super) fn began(&self) -> Instant {
        self.epoch + Duration::from_nanos(self.began.load(Ordering::Acquire))
    }

    /// One interrupt check (QuickJS's interrupt handler): whether to stop the call now.
    pub(super) fn check(&self) -> bool {
        if self.halted().is_some() {
            return true;
        }
        let spent = self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_err();
        if spent {
            self.out_of_fuel.store(true, Ordering::Relaxed);
        }
        spent
    }

    /// The watchdog's order to stop the engine: its interrupt checks say stop, its
    /// allocator refuses everything.
    pub(super) fn halt(&self, why: Halt) {
        let code = match why {
            Halt::Time => 1,
            Halt::Stopping => 2,
        };
        let _ = self
            .halt
            .compare_exchange(0, code, Ordering::AcqRel, Ordering::Acquire);
    }

    pub(super) fn halted(&self) -> Option<Halt> {
        match self.halt.load(Ordering::Acquire) {
            0 => None,
            1 => Some(Halt::Time),
            _ => Some(Halt::Stopping),
        }
    }

    pub(super) fn out_of_fuel(&self) -> bool {
        self.out_of_fuel.load(Ordering::Relaxed)
    }

    pub(super) fn out_of_memory(&self) -> bool {
        self.out_of_memory.load(Ordering::Relaxed)
    }

    /// Whether the engine may take `more` bytes: not once halted, nor beyond the limit (which
    /// the call is then marked as having reached).
    fn may_take(&self, more: usize) -> bool {
        if self.halted().is_some() {
            return false;
        }
        let over = self
            .used
            .load(Ordering::Relaxed)
            .checked_add(more)
            .is_none_or(|total| total > self.limit);
        if over {
            self.out_of_memory.store(true, Ordering::Relaxed);
        }
        !over
    }

    fn took(&self, bytes: usize) {
        self.used.fetch_add(bytes, Ordering::Relaxed);
    }

    fn gave_back(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// The engine's allocator: Rust's, counted against the [`Meter`]'s limit. QuickJS's own
/// limit (`JS_SetMemoryLimit`) refuses the same, but silently: an engine out of memory may
/// not even manage to build its `InternalError` and throw `null` instead, and the error's
/// text is no proof (a user may throw it too).
pub(super) struct Metered {
    pub(super) meter: Arc<Meter>,
}

// SAFETY: every block comes from `RustAllocator` and goes back to it; what is added here is
// bookkeeping, and the refusal of a request (a null pointer, which QuickJS handles as out of
// memory), which the trait allows.
unsafe impl Allocator for Metered {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.meter.may_take(size) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.alloc(size);
        if !ptr.is_null() {
            // SAFETY: a block `RustAllocator` just gave.
            self.meter.took(unsafe { RustAllocator::usable_size(ptr) });
        }
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        if !self.meter.may_take(total) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.calloc(count, size);
        if !ptr.is_null() {
            // SAFETY: a block `RustAllocator` just gave.
            self.meter.took(unsafe { RustAllocator::usable_size(ptr) });
        }
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        self.meter.gave_back(RustAllocator::usable_size(ptr));
        RustAllocator.dealloc(ptr);
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.alloc(new_size);
        }
        let old = RustAllocator::usable_size(ptr);
        if new_size > old && !self.meter.may_take(new_size - old) {
            return std::ptr::null_mut();
        }
        let moved = RustAllocator.realloc(ptr, new_size);
        if !moved.is_null() {
            self.meter.gave_back(old);
            self.meter.took(RustAllocator::usable_size(moved));
        }
        moved
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        RustAllocator::usable_size(ptr)
    }
}

#[cfg(test)]
mod tests {
    use super::{Halt, Meter};

    #[test]
    fn fuel_runs_out_at_the_check_after_the_last_and_a_halt_stops_everything() {
        let m = Meter::new(100);
        m.begin(2);
        assert!(!m.check() && !m.check(), "two checks of fuel");
        assert!(m.check() && m.out_of_fuel(), "the third stops it");
        m.begin(2);
        assert!(!m.out_of_fuel(), "a new call, new fuel");
        assert!(m.may_take(100) && !m.out_of_memory());
        m.took(60);
        assert!(!m.may_take(41) && m.out_of_memory(), "beyond the limit");
        m.halt(Halt::Time);
        m.halt(Halt::Stopping);
        assert_eq!(m.halted(), Some(Halt::Time), "the first reason stays");
        assert!(m.check() && !m.may_take(1), "halted: nothing more");
    }
}
