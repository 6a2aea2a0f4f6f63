//! Several consoles (the web UI in several tabs, `anduin ctl` beside it) change one filter's
//! condition at the same moment, through the API of a running query: each change is answered
//! with its own number and the epoch it applied at, and the history is one chain — ordered by
//! number, each change's old value the new value of the one before, the epochs never going
//! back — whose last value is the condition the query has now. Nothing is lost or applied
//! twice, whichever request the server took first.

use crate::common;

use std::collections::BTreeSet;
use std::process::Command;

use common::{generated_filtered, start_with_api};

const CONSOLES: usize = 6;
const EACH: usize = 4;

#[test]
fn changes_sent_at_once_from_several_consoles_apply_one_after_another() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("q.flow"), generated_filtered(2000, "value < 42")).expect("writes");
    std::fs::create_dir(d.join("rt")).expect("a runtime dir");
    let mut c = Command::new(env!("CARGO_BIN_EXE_anduin"));
    c.args(["run", "q.flow", "-q", "--checkpoint-dir", "ck"])
        .args(["--checkpoint-interval", "200ms"])
        .current_dir(d)
        .env("XDG_RUNTIME_DIR", d.join("rt"))
        .env_remove("RUST_LOG");
    let (_run, api, _stderr) = start_with_api(c);

    let answers: Vec<anduin_api::ChangeRecord> = std::thread::scope(|s| {
        let consoles: Vec<_> = (0..CONSOLES)
            .map(|console| {
                let api = api.clone();
                s.spawn(move || {
                    let client = anduin_api::Client::new(&api, None).expect("an address");
                    (0..EACH)
                        .map(|k| {
                            let value = format!("value < {}", 100 + console * EACH + k);
                            client
                                .set("q", "low", "condition", &value, &format!("tab{console}"))
                                .unwrap_or_else(|e| panic!("{value}: {e}"))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        consoles
            .into_iter()
            .flat_map(|t| t.join().expect("a console"))
            .collect()
    });

    let client = anduin_api::Client::new(&api, None).expect("an address");
    let history = client.history("q").expect("the history");
    assert_eq!(history.len(), CONSOLES * EACH, "{history:?}");
    let seqs: BTreeSet<u64> = answers.iter().map(|r| r.seq).collect();
    assert_eq!(seqs.len(), CONSOLES * EACH, "each change its own number");
    let mut previous = "value < 42".to_string();
    let mut epoch = 0;
    for (i, r) in history.iter().enumerate() {
        assert_eq!(r.seq, i as u64 + 1, "{history:?}");
        assert_eq!(r.old, previous, "change #{} follows #{}", r.seq, i);
        assert!(
            r.epoch >= epoch,
            "change #{} at epoch {} after {epoch}",
            r.seq,
            r.epoch
        );
        assert!(
            answers.contains(r),
            "change #{} is the one its console was told",
            r.seq
        );
        previous = r.new.clone();
        epoch = r.epoch;
    }
    let now = client.params("q", "low").expect("the params");
    assert_eq!(
        now[0].value, previous,
        "the last change is the condition now"
    );
}
