//! Two writers of one checkpoint store (an S3-compatible moto server on loopback): the
//! second to commit an epoch is refused with an error naming the store and the object that
//! exists, never overwriting the first's files or manifest, and writes nothing there after.

use crate::common;

use std::collections::BTreeMap;

use anduin_checkpoint::plan::PlanFingerprint;
use anduin_checkpoint::{
    write_file_atomically, CheckpointError, FileEntry, Manifest, OperatorState, StateFileRef,
    Store, MANIFEST_FORMAT,
};
use anduin_types::Epoch;
use common::s3::{S3Server, BUCKET};

fn manifest(epoch: u64, files: Vec<FileEntry>) -> Manifest {
    let refs = files
        .iter()
        .map(|f| StateFileRef {
            epoch,
            file: f.name.clone(),
        })
        .collect();
    Manifest {
        format: MANIFEST_FORMAT,
        epoch,
        created_unix_ms: 0,
        finished: false,
        plan: PlanFingerprint::default(),
        files,
        operators: BTreeMap::from([(
            "op".to_string(),
            OperatorState {
                inline: Some(serde_json::json!({ "epoch": epoch })),
                files: refs,
            },
        )]),
        controls: Vec::new(),
    }
}

#[test]
fn a_second_writer_of_an_s3_checkpoint_is_refused_and_overwrites_nothing() {
    let s3 = S3Server::start();
    let caches: Vec<_> = (0..3).map(|_| tempfile::tempdir().expect("tmp")).collect();
    let open = |i: usize| {
        let s =
            Store::open_s3(BUCKET, "shared/q", &s3.settings(), caches[i].path()).expect("opens");
        s.preflight(true).expect("the server is usable");
        s
    };
    let (first, second) = (open(0), open(1));

    // Both take checkpoint 1, with different state.
    first.begin(Epoch(1)).expect("begins");
    second.begin(Epoch(1)).expect("begins");
    let mine =
        write_file_atomically(&first.dir().file(Epoch(1), "001-w.full"), b"first").expect("writes");
    let theirs = write_file_atomically(&second.dir().file(Epoch(1), "001-w.full"), b"second!")
        .expect("writes");
    first.complete(&manifest(1, vec![mine])).expect("commits");
    let e = second
        .complete(&manifest(1, vec![theirs]))
        .expect_err("refused");
    let text = e.to_string();
    assert!(
        matches!(e, CheckpointError::AlreadyCommitted { epoch: 1, .. }),
        "{text}"
    );
    assert!(
        text.contains("s3://anduin-test/shared/q/chk-00000001/") && text.contains("another run"),
        "{text}"
    );

    // A checkpoint without files (state inline only) reaches the manifest itself, which
    // is created only if absent.
    first.begin(Epoch(2)).expect("begins");
    first.complete(&manifest(2, Vec::new())).expect("commits");
    let late = open(2);
    late.begin(Epoch(2)).expect("begins");
    let e = late
        .complete(&manifest(2, Vec::new()))
        .expect_err("refused")
        .to_string();
    assert!(
        e.contains("s3://anduin-test/shared/q/chk-00000002/MANIFEST.json already exists"),
        "{e}"
    );

    // The refused writer neither begins nor deletes anything any more.
    assert!(second.begin(Epoch(3)).is_err());
    second
        .remove(&[Epoch(1), Epoch(2)])
        .expect("its cache only");
    assert_eq!(second.retain(1).expect("retains"), vec![Epoch(1)]);

    // The first's checkpoints are intact, as another machine sees them.
    let check = tempfile::tempdir().expect("tmp");
    let reader = Store::open_s3(BUCKET, "shared/q", &s3.settings(), check.path()).expect("opens");
    assert_eq!(reader.epochs().expect("lists"), vec![Epoch(1), Epoch(2)]);
    reader.validate(Epoch(1)).expect("valid");
    assert_eq!(
        std::fs::read(reader.dir().file(Epoch(1), "001-w.full")).expect("fetched"),
        b"first"
    );
    assert_eq!(
        reader.validate(Epoch(2)).expect("valid").manifest.operators["op"].inline,
        Some(serde_json::json!({ "epoch": 2 }))
    );
}
