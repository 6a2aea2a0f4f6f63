//! A simulated chain of operators for the autoscaler's scenarios: producers offer rows to the
//! source's backlog; the chain reads as fast as its slowest stage lets it (backpressure);
//! each stage reports the figures a running query would. Rounds are decided through a
//! [`DecisionLog`], each round's changes carried out (as a rescale that took `rescale_ms`)
//! before the next. No clock: a round's time is its number × the window.

use anduin_coordinator::autoscale::{
    AutoscaleConfig, AutoscaleState, DecisionLog, Figures, Observation, OperatorFacts, RescaleFact,
    Round,
};

/// One operator of the chain.
pub struct Stage {
    /// Its name.
    pub name: &'static str,
    /// Its instances.
    pub parallelism: u32,
    /// Rows one instance processes per busy second.
    pub true_rate: f64,
    /// Rows out per row in.
    pub selectivity: f64,
}

/// `name`, `parallelism` instances of `true_rate` rows per busy second, 1:1.
pub fn stage(name: &'static str, parallelism: u32, true_rate: f64) -> Stage {
    Stage {
        name,
        parallelism,
        true_rate,
        selectivity: 1.0,
    }
}

/// The chain, its source's backlog, and the rounds decided so far.
pub struct Pipeline {
    /// The stages, the source first.
    pub stages: Vec<Stage>,
    /// Rows offered and not read yet.
    pub backlog: f64,
    /// Rescales carried out so far.
    pub rescales: Vec<RescaleFact>,
    /// How long each rescale takes, ms.
    pub rescale_ms: u64,
    /// The rounds.
    pub log: DecisionLog,
}

/// Every round covers one minute.
pub const WINDOW_MS: u64 = 60_000;

impl Pipeline {
    /// A chain deciding with `config`, no backlog, no rescale yet.
    pub fn new(stages: Vec<Stage>, config: AutoscaleConfig) -> Self {
        Pipeline {
            stages,
            backlog: 0.0,
            rescales: Vec::new(),
            rescale_ms: 10_000,
            log: DecisionLog::new(config, AutoscaleState::default()),
        }
    }

    /// The time of round `n`, ms.
    pub fn at(n: usize) -> u64 {
        n as u64 * WINDOW_MS
    }

    /// The figures of the next window, with `offered` rows per second arriving.
    pub fn observe(&mut self, offered: f64) -> Observation {
        let window_s = WINDOW_MS as f64 / 1000.0;
        // Rows per second at the source's input the slowest stage lets through.
        let mut through = f64::INFINITY;
        let mut share = 1.0;
        for s in &self.stages {
            through = through.min(s.true_rate * f64::from(s.parallelism) / share);
            share *= s.selectivity;
        }
        let available = self.backlog + offered * window_s;
        let read = available.min(through * window_s).floor();
        self.backlog = available - read;
        let mut rows = read;
        let mut operators = Vec::new();
        for (i, s) in self.stages.iter().enumerate() {
            let next = self.stages.get(i + 1).map(|n| n.name.to_string());
            let out = (rows * s.selectivity).floor();
            operators.push(OperatorFacts {
                name: s.name.to_string(),
                upstream: i
                    .checked_sub(1)
                    .map(|u| self.stages[u].name.to_string())
                    .into_iter()
                    .collect(),
                parallelism: s.parallelism,
                figures: Some(Figures {
                    window_ms: WINDOW_MS,
                    rows_in: rows as u64,
                    rows_out: next.into_iter().map(|n| (n, out as u64)).collect(),
                    busy_ns: Some((rows / s.true_rate * 1e9) as u64),
                    busy_ratio: None,
                    backlog: Some(if i == 0 { self.backlog as u64 } else { 0 }),
                    state_bytes: None,
                }),
            });
            rows = out;
        }
        Observation {
            at_ms: Self::at(self.log.rounds.len()),
            operators,
            rescales: self.rescales.clone(),
        }
    }

    /// Decides the next round with `offered` rows per second arriving, carries out its
    /// changes and returns it.
    pub fn round(&mut self, offered: f64) -> Round {
        let observation = self.observe(offered);
        let at = observation.at_ms;
        let round = self
            .log
            .record(observation)
            .expect("a chain is a valid observation")
            .clone();
        for (name, to) in round.changes() {
            let stage = self
                .stages
                .iter_mut()
                .find(|s| s.name == name)
                .expect("a decision is for a stage of the chain");
            stage.parallelism = to;
            self.rescales.push(RescaleFact {
                operator: name.to_string(),
                started_at_ms: at,
                finished_at_ms: at + self.rescale_ms,
            });
        }
        round
    }

    /// The parallelism of stage `name` now.
    pub fn parallelism(&self, name: &str) -> u32 {
        self.stages
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.parallelism)
            .expect("a stage of the chain")
    }
}
