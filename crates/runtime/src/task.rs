//! The event loop of a task with inputs: wait on every input channel, feed the chain, track
//! the minimum watermark, finish when every input has ended.

use anduin_operators::OperatorError;
use anduin_types::{Message, Watermark};
use crossbeam_channel::{Receiver, Select};

use crate::chain::Chain;
use crate::channel::Envelope;

/// One input channel of a task and the head's input port it feeds.
pub(crate) struct Inlet {
    pub rx: Receiver<Envelope>,
    pub port: usize,
    /// The last sequence number seen (messages arrive in order, each exactly once).
    pub last_seq: u64,
    pub watermark: Watermark,
    pub ended: bool,
}

/// A task whose head has inputs.
pub(crate) struct OperatorTask {
    pub name: String,
    pub inlets: Vec<Inlet>,
    pub chain: Chain,
}

impl OperatorTask {
    /// Runs until every input has ended (then flushes) or something fails.
    pub(crate) fn run(mut self) -> Result<(), OperatorError> {
        let receivers: Vec<Receiver<Envelope>> = self.inlets.iter().map(|i| i.rx.clone()).collect();
        let mut select = Select::new();
        for rx in &receivers {
            select.recv(rx);
        }
        let mut open = self.inlets.len();
        let mut watermark = Watermark::MIN;
        while open > 0 {
            let op = select.select();
            let idx = op.index();
            let inlet = self
                .inlets
                .get_mut(idx)
                .expect("select indices follow the inlets");
            let env = match op.recv(&receivers[idx]) {
                Ok(env) => env,
                Err(_) => {
                    // The producer stopped without an End: it failed, and says why itself.
                    return Err(OperatorError::DownstreamGone {
                        operator: self.name.clone(),
                    });
                }
            };
            debug_assert_eq!(
                env.seq,
                inlet.last_seq + 1,
                "channel messages arrive in order"
            );
            inlet.last_seq = env.seq;
            let port = inlet.port;
            match env.msg {
                Message::Data(batch) => self.chain.push(port, batch)?,
                Message::Watermark(w) => {
                    inlet.watermark = inlet.watermark.max(w);
                    watermark = self.advance(watermark)?;
                }
                Message::End => {
                    inlet.ended = true;
                    inlet.watermark = Watermark::MAX;
                    open -= 1;
                    select.remove(idx);
                    if open > 0 {
                        watermark = self.advance(watermark)?;
                    }
                }
                Message::Barrier(_) | Message::Control(_) => {
                    return Err(OperatorError::Execution {
                        operator: self.name.clone(),
                        message:
                            "barriers and control messages are not supported by this runtime yet"
                                .into(),
                    })
                }
                _ => {}
            }
        }
        self.chain.end_of_input()
    }

    /// Forwards the minimum watermark over the inputs if it moved.
    fn advance(&mut self, current: Watermark) -> Result<Watermark, OperatorError> {
        let min = self
            .inlets
            .iter()
            .map(|i| i.watermark)
            .min()
            .unwrap_or(Watermark::MAX);
        if min > current {
            self.chain.watermark(min)?;
            Ok(min)
        } else {
            Ok(current)
        }
    }
}
