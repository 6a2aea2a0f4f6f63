//! The event time of a task with inputs: the minimum watermark over the inputs that are not
//! idle, or idle itself when every open input is idle. Pure, so that it is tested without
//! threads.

use anduin_types::Watermark;

/// What a task knows about one input's event time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InputTime {
    pub watermark: Watermark,
    /// Its producer said its sources are idle.
    pub idle: bool,
    /// It has ended (its watermark is then +∞).
    pub ended: bool,
}

/// The event time of a task, from its inputs'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskTime {
    /// The minimum watermark over the inputs that are active or ended.
    At(Watermark),
    /// Every input that has not ended is idle: the task is idle for its consumers.
    Idle,
}

/// Combines the inputs' event time.
pub(crate) fn task_time(inputs: &[InputTime]) -> TaskTime {
    let mut open = inputs.iter().filter(|i| !i.ended).peekable();
    if open.peek().is_some() && open.all(|i| i.idle) {
        return TaskTime::Idle;
    }
    TaskTime::At(
        inputs
            .iter()
            .filter(|i| i.ended || !i.idle)
            .map(|i| if i.ended { Watermark::MAX } else { i.watermark })
            .min()
            .unwrap_or(Watermark::MAX),
    )
}

/// Per input port (`0..ports`), whether every input of it is exhausted, from each input's
/// `(port, exhausted)`: a port is exhausted when all its producers are, and a port without
/// inputs never is.
pub(crate) fn exhausted_ports(inputs: &[(usize, bool)], ports: usize) -> Vec<bool> {
    (0..ports)
        .map(|port| {
            let mut of_port = inputs.iter().filter(|(p, _)| *p == port).peekable();
            of_port.peek().is_some() && of_port.all(|(_, exhausted)| *exhausted)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(w: i64, idle: bool) -> InputTime {
        InputTime {
            watermark: Watermark(w),
            idle,
            ended: false,
        }
    }

    #[test]
    fn the_minimum_over_active_inputs() {
        assert_eq!(
            task_time(&[input(5, false), input(3, false)]),
            TaskTime::At(Watermark(3))
        );
    }

    #[test]
    fn an_idle_input_does_not_hold_the_watermark_back() {
        assert_eq!(
            task_time(&[input(5, false), input(3, true)]),
            TaskTime::At(Watermark(5))
        );
    }

    #[test]
    fn a_task_whose_open_inputs_are_all_idle_is_idle() {
        let ended = InputTime {
            watermark: Watermark::MAX,
            idle: false,
            ended: true,
        };
        assert_eq!(task_time(&[input(5, true), ended]), TaskTime::Idle);
        assert_eq!(task_time(&[input(5, true), input(7, true)]), TaskTime::Idle);
    }

    #[test]
    fn ended_inputs_count_as_complete() {
        let ended = InputTime {
            watermark: Watermark(1),
            idle: true,
            ended: true,
        };
        assert_eq!(
            task_time(&[input(5, false), ended]),
            TaskTime::At(Watermark(5))
        );
        assert_eq!(task_time(&[ended]), TaskTime::At(Watermark::MAX));
        assert_eq!(task_time(&[]), TaskTime::At(Watermark::MAX));
    }

    #[test]
    fn a_port_is_exhausted_once_every_producer_of_it_is() {
        let inputs = [(0, true), (1, true), (1, false), (0, true)];
        assert_eq!(exhausted_ports(&inputs, 3), vec![true, false, false]);
        let inputs = [(0, true), (1, true), (1, true)];
        assert_eq!(exhausted_ports(&inputs, 2), vec![true, true]);
    }
}
