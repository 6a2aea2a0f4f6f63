//! The decision of the `kubernetes` scheduler, and the scheduler against a fake API server.

use super::fake::FakeApi;
use super::*;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

fn facts(phase: Phase, age_s: i64, now: DateTime<Utc>) -> PodFacts {
    PodFacts {
        name: "w".into(),
        phase,
        terminating: false,
        created: Some(now - chrono::Duration::seconds(age_s)),
        stuck: None,
    }
}

#[test]
fn kubernetes_a_missing_pod_is_created_unless_its_worker_is_still_known() {
    let now = Utc::now();
    assert_eq!(tend_pod(None, None, now), PodTend::Create);
    assert_eq!(tend_pod(Some(Link::Dead), None, now), PodTend::Create);
    // Deleted by someone while its worker heartbeats on: created once it is declared dead.
    assert_eq!(tend_pod(Some(Link::Alive), None, now), PodTend::Leave);
    assert_eq!(tend_pod(Some(Link::Awaited), None, now), PodTend::Leave);
}

#[test]
fn kubernetes_an_ended_pod_is_replaced_whatever_the_coordinator_knows() {
    let now = Utc::now();
    for phase in [Phase::Failed, Phase::Succeeded] {
        for link in [None, Some(Link::Alive), Some(Link::Dead)] {
            assert_eq!(
                tend_pod(link, Some(&facts(phase, 5, now)), now),
                PodTend::Replace,
                "{phase:?} {link:?}"
            );
        }
    }
}

#[test]
fn kubernetes_a_starting_pod_is_left_to_start_and_register() {
    let now = Utc::now();
    // Pulling its image, however long.
    assert_eq!(
        tend_pod(None, Some(&facts(Phase::Pending, 600, now)), now),
        PodTend::Leave
    );
    // Running, registering; the dead worker of its name was its predecessor.
    assert_eq!(
        tend_pod(None, Some(&facts(Phase::Running, 10, now)), now),
        PodTend::Leave
    );
    assert_eq!(
        tend_pod(Some(Link::Dead), Some(&facts(Phase::Running, 10, now)), now),
        PodTend::Leave
    );
    assert_eq!(
        tend_pod(
            Some(Link::Alive),
            Some(&facts(Phase::Running, 600, now)),
            now
        ),
        PodTend::Leave
    );
}

#[test]
fn kubernetes_a_pod_whose_worker_was_given_up_is_replaced() {
    let now = Utc::now();
    // Declared dead while its pod runs (paused, cut off), or never registered.
    assert_eq!(
        tend_pod(
            Some(Link::Dead),
            Some(&facts(Phase::Running, 600, now)),
            now
        ),
        PodTend::Replace
    );
    assert_eq!(
        tend_pod(None, Some(&facts(Phase::Running, 121, now)), now),
        PodTend::Replace
    );
    // Its node went away.
    assert_eq!(
        tend_pod(
            Some(Link::Dead),
            Some(&facts(Phase::Unknown, 600, now)),
            now
        ),
        PodTend::Replace
    );
}

#[test]
fn kubernetes_a_pod_being_deleted_is_waited_for() {
    let now = Utc::now();
    let mut pod = facts(Phase::Failed, 600, now);
    pod.terminating = true;
    for link in [None, Some(Link::Dead), Some(Link::Alive)] {
        assert_eq!(tend_pod(link, Some(&pod), now), PodTend::Wait);
    }
}

/// A scheduler of `workers` workers against `fake`, its token in `dir`.
fn scheduler(fake: &FakeApi, dir: &Path, workers: u32) -> Result<Kubernetes> {
    Kubernetes::connect(settings(fake, dir, workers)?)
}

/// The settings of [`scheduler`].
fn settings(fake: &FakeApi, dir: &Path, workers: u32) -> Result<Settings> {
    let token = dir.join("token");
    std::fs::write(&token, "sesame\n")?;
    Ok(Settings {
        endpoint: Endpoint {
            api: fake.url(),
            namespace: fake.namespace.clone(),
            token_file: Some(token),
            ca_file: None,
        },
        name: "anduin".into(),
        image: "example.org/anduin:test".into(),
        env_secret: "anduin".into(),
        coordinator_address: "10.0.0.7:7400".parse()?,
        workers,
        max_workers: workers,
        slots: 2,
    })
}

/// A scheduler of `workers` workers against `fake` that may add up to `max` in all.
fn growing(fake: &FakeApi, dir: &Path, workers: u32, max: u32) -> Result<Kubernetes> {
    Kubernetes::connect(settings(fake, dir, workers)?.at_most(max)?)
}

/// Pod `name` of `fake` as created, with what names it taken out (to compare two pods).
fn unnamed(fake: &FakeApi, name: &str) -> String {
    let pod = fake.state().pods[name].clone();
    pod["metadata"]["labels"].to_string().replace(name, "POD")
        + &pod["spec"].to_string().replace(name, "POD")
}

fn created(events: &[Event]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Created { pod } => Some(pod.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn kubernetes_scheduler_creates_its_labelled_worker_pods_once() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let fake = FakeApi::start("streams");
    let mut k = scheduler(&fake, dir.path(), 3)?;
    let events = k.tick(&BTreeMap::new(), Utc::now());
    assert_eq!(
        created(&events),
        ["anduin-worker-0", "anduin-worker-1", "anduin-worker-2"],
        "{events:?}"
    );
    {
        let state = fake.state();
        assert_eq!(state.pods.len(), 3);
        let pod = &state.pods["anduin-worker-1"];
        let labels = &pod["metadata"]["labels"];
        assert_eq!(labels["app.kubernetes.io/managed-by"], "anduin");
        assert_eq!(labels["anduin.io/coordinator"], "anduin");
        assert_eq!(labels["anduin.io/worker"], "anduin-worker-1");
        let container = &pod["spec"]["containers"][0];
        assert_eq!(container["image"], "example.org/anduin:test");
        assert_eq!(container["envFrom"][0]["secretRef"]["name"], "anduin");
        let command: Vec<&str> = container["command"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(
            command.join(" "),
            "anduin worker --coordinator 10.0.0.7:7400 --name anduin-worker-1 --slots 2 \
             --data-host $(POD_IP) --work-dir /tmp/anduin-worker"
        );
        // Every call carried the token and every list the coordinator's selector.
        assert!(state
            .requests
            .iter()
            .all(|r| r.authorization.as_deref() == Some("Bearer sesame")));
        let lists: Vec<_> = state
            .requests
            .iter()
            .filter(|r| r.method == "GET")
            .collect();
        assert!(lists.iter().all(|r| r.selector.as_deref()
            == Some("app.kubernetes.io/managed-by=anduin,anduin.io/coordinator=anduin")));
    }
    // Pulling their images, then running and registered: nothing to do.
    let events = k.tick(&BTreeMap::new(), Utc::now());
    assert!(events.is_empty(), "{events:?}");
    let known: BTreeMap<String, Link> = (0..3)
        .map(|i| (format!("anduin-worker-{i}"), Link::Alive))
        .collect();
    for i in 0..3 {
        fake.state()
            .set_phase(&format!("anduin-worker-{i}"), "Running");
    }
    let events = k.tick(&known, Utc::now());
    assert!(events.is_empty(), "{events:?}");
    Ok(())
}

#[test]
fn kubernetes_scheduler_replaces_a_failed_or_deleted_pod_and_a_given_up_worker() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let fake = FakeApi::start("streams");
    let mut k = scheduler(&fake, dir.path(), 3)?;
    k.tick(&BTreeMap::new(), Utc::now());
    let mut known: BTreeMap<String, Link> = (0..3)
        .map(|i| (format!("anduin-worker-{i}"), Link::Alive))
        .collect();
    {
        let mut state = fake.state();
        state.set_phase("anduin-worker-0", "Running");
        state.set_phase("anduin-worker-1", "Failed");
        state.pods.remove("anduin-worker-2");
    }
    known.insert("anduin-worker-2".into(), Link::Dead);
    let events = k.tick(&known, Utc::now());
    assert!(
        matches!(&events[..], [
            Event::Deleted { pod: p1, why: Deleted::Ended(Phase::Failed) },
            Event::Created { pod: p1b },
            Event::Created { pod: p2 },
        ] if p1 == "anduin-worker-1" && p1b == p1 && p2 == "anduin-worker-2"),
        "{events:?}"
    );
    assert_eq!(
        fake.state().pods["anduin-worker-1"]["status"]["phase"],
        "Pending"
    );
    // Worker 0 declared dead while its pod runs on, past the time to register: replaced.
    known.insert("anduin-worker-0".into(), Link::Dead);
    let events = k.tick(&known, Utc::now() + chrono::Duration::seconds(600));
    assert!(
        matches!(&events[..], [
            Event::Deleted { pod, why: Deleted::GivenUp },
            Event::Created { pod: again },
        ] if pod == "anduin-worker-0" && again == pod),
        "{events:?}"
    );
    Ok(())
}

#[test]
fn kubernetes_scheduler_deletes_its_pods_on_stop_and_those_beyond_workers() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let fake = FakeApi::start("streams");
    // Another coordinator's pod in the namespace: never touched.
    fake.state().pods.insert(
        "other-worker-0".into(),
        json!({"metadata": {"name": "other-worker-0", "labels": {
            "app.kubernetes.io/managed-by": "anduin", "anduin.io/coordinator": "other"}}}),
    );
    let mut k = scheduler(&fake, dir.path(), 3)?;
    k.tick(&BTreeMap::new(), Utc::now());
    // Started again with fewer workers: the third pod goes.
    let mut k = scheduler(&fake, dir.path(), 2)?;
    let events = k.tick(&BTreeMap::new(), Utc::now());
    assert!(
        matches!(&events[..], [Event::Deleted { pod, why: Deleted::Unwanted }] if pod == "anduin-worker-2"),
        "{events:?}"
    );
    let events = k.stop_pods();
    assert_eq!(events.len(), 2, "{events:?}");
    let pods: Vec<String> = fake.state().pods.keys().cloned().collect();
    assert_eq!(pods, ["other-worker-0"]);
    assert!(fake.state().requests.iter().any(
        |r| r.method == "DELETE" && r.path == "/api/v1/namespaces/streams/pods/anduin-worker-0"
    ));
    Ok(())
}

#[test]
fn kubernetes_a_forbidden_answer_names_the_rbac_the_service_account_needs() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let fake = FakeApi::start("streams");
    fake.state().forbid = Some(
        "pods is forbidden: User \"system:serviceaccount:streams:default\" cannot list \
         resource \"pods\""
            .into(),
    );
    let Err(e) = scheduler(&fake, dir.path(), 1) else {
        panic!("a scheduler the API forbids to list pods starts");
    };
    let e = format!("{e:#}");
    for part in [
        "RBAC",
        "create, delete, get, list and watch on pods in namespace streams",
        &fake.url(),
        "cannot list the pods labelled",
        "system:serviceaccount:streams:default",
    ] {
        assert!(e.contains(part), "`{part}` not in: {e}");
    }
    // Forbidden to create after it started (a Role edited meanwhile): told per pod.
    fake.state().forbid = None;
    let mut k = scheduler(&fake, dir.path(), 1)?;
    fake.state().forbid = Some("pods is forbidden".into());
    let events = k.tick(&BTreeMap::new(), Utc::now());
    assert!(
        matches!(&events[..], [Event::Failed(ApiError::Forbidden { .. })]),
        "{events:?}"
    );
    Ok(())
}

#[test]
fn kubernetes_scheduler_says_what_to_give_when_it_cannot_reach_the_api() {
    let dir = tempfile::tempdir().expect("a directory");
    // A port the system gave and took back: nothing listens there.
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a port");
    let settings = |api: String, ca_file: Option<PathBuf>| Settings {
        endpoint: Endpoint {
            api,
            namespace: "streams".into(),
            token_file: None,
            ca_file,
        },
        name: "anduin".into(),
        image: "i".into(),
        env_secret: "s".into(),
        coordinator_address: free,
        workers: 1,
        max_workers: 1,
        slots: 1,
    };
    let e = Kubernetes::connect(settings(format!("http://{free}"), None))
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
    assert!(
        e.contains("cannot be reached")
            && e.contains(&free.to_string())
            && e.contains("--kube-api"),
        "{e}"
    );
    let e = Kubernetes::connect(settings(format!("https://{free}"), None))
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
    assert!(e.contains("--kube-ca-file"), "{e}");
    let not_pem = dir.path().join("ca.crt");
    std::fs::write(&not_pem, "not a certificate").expect("written");
    let e = Kubernetes::connect(settings(format!("https://{free}"), Some(not_pem)))
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
    assert!(
        e.contains("no PEM certificate") || e.contains("not PEM"),
        "{e}"
    );
}

#[test]
fn kubernetes_scheduler_reaches_an_https_api_with_the_ca_it_is_given() -> Result<()> {
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cluster/kubernetes/testdata");
    let fake = FakeApi::start_tls(
        "streams",
        &std::fs::read(testdata.join("server.crt"))?,
        &std::fs::read(testdata.join("server.key"))?,
    );
    let settings = |ca_file: PathBuf| Settings {
        endpoint: Endpoint {
            api: format!("https://{}", fake.addr),
            namespace: "streams".into(),
            token_file: None,
            ca_file: Some(ca_file),
        },
        name: "anduin".into(),
        image: "i".into(),
        env_secret: "s".into(),
        coordinator_address: fake.addr,
        workers: 1,
        max_workers: 1,
        slots: 1,
    };
    let mut k = Kubernetes::connect(settings(testdata.join("ca.crt")))?;
    let events = k.tick(&BTreeMap::new(), Utc::now());
    assert_eq!(created(&events), ["anduin-worker-0"], "{events:?}");
    // Another CA than the one that signed the API's certificate: refused, saying where.
    let e = Kubernetes::connect(settings(testdata.join("server.crt")))
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
    assert!(
        e.contains("cannot be reached") && e.contains("--kube-ca-file"),
        "{e}"
    );
    Ok(())
}

#[test]
fn kubernetes_flags_are_checked_with_what_to_give() {
    let listen: SocketAddr = "0.0.0.0:7400".parse().expect("an address");
    let args = KubeArgs {
        kube_namespace: Some("streams".into()),
        kube_name: "anduin".into(),
        ..KubeArgs::default()
    };
    let e = format!("{:#}", args.settings(listen, 1, 1).expect_err("no image"));
    assert!(e.contains("--kube-worker-image"), "{e}");
    let args = KubeArgs {
        kube_worker_image: Some("i".into()),
        ..args
    };
    let e = format!("{:#}", args.settings(listen, 1, 1).expect_err("no secret"));
    assert!(
        e.contains("--kube-worker-secret") && e.contains("ANDUIN_CLUSTER_SECRET"),
        "{e}"
    );
    let args = KubeArgs {
        kube_worker_secret: Some("anduin".into()),
        ..args
    };
    let e = format!("{:#}", args.settings(listen, 1, 1).expect_err("no address"));
    assert!(e.contains("--kube-coordinator-address"), "{e}");
    let args = KubeArgs {
        kube_coordinator_address: Some("localhost:7400".into()),
        ..args
    };
    let s = args.settings(listen, 3, 2).expect("settings");
    assert_eq!(s.coordinator_address.port(), 7400);
    assert_eq!(s.endpoint.api, "https://kubernetes.default.svc");
    // --max-workers: at least the pods it keeps, at most MAX_PODS.
    let e = format!("{:#}", s.clone().at_most(2).expect_err("below --workers"));
    assert!(
        e.contains("--max-workers 2 is below --workers 3") && e.contains("give at least 3"),
        "{e}"
    );
    let e = format!(
        "{:#}",
        s.clone().at_most(MAX_PODS + 1).expect_err("too many")
    );
    assert!(e.contains("at most 1000 pods"), "{e}");
    assert_eq!(s.clone().at_most(3).expect("as many").max_workers, 3);
    assert_eq!(s.at_most(8).expect("more").max_workers, 8);
    let bad = KubeArgs {
        kube_name: "Anduin_1".into(),
        ..args
    };
    assert!(bad.settings(listen, 1, 1).is_err());
}

#[test]
fn kubernetes_scheduler_adds_pods_made_as_those_it_keeps_up_to_max_workers() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let fake = FakeApi::start("streams");
    let mut k = growing(&fake, dir.path(), 2, 4)?;
    k.tick(&BTreeMap::new(), Utc::now());
    assert_eq!(k.may_add(), Some((2, 2)), "two more of two slots each");
    let mut events = Vec::new();
    assert_eq!(
        k.add(1, &mut events),
        Ok(vec!["anduin-worker-2".to_string()])
    );
    assert_eq!(created(&events), ["anduin-worker-2"], "{events:?}");
    // Created at once, as the pods it keeps are: the same labels, image, Secret, command.
    assert_eq!(
        unnamed(&fake, "anduin-worker-2"),
        unnamed(&fake, "anduin-worker-0")
    );
    let pod = fake.state().pods["anduin-worker-2"].clone();
    assert_eq!(
        pod["metadata"]["labels"]["anduin.io/worker"],
        "anduin-worker-2"
    );
    assert_eq!(
        pod["spec"]["containers"][0]["command"][5],
        "anduin-worker-2"
    );
    assert_eq!((k.kept(), k.may_add()), (3, Some((1, 2))));
    // Kept as those: left to start, created again once it failed.
    let events = k.tick(&BTreeMap::new(), Utc::now());
    assert!(events.is_empty(), "{events:?}");
    fake.state().set_phase("anduin-worker-2", "Failed");
    let events = k.tick(&BTreeMap::new(), Utc::now());
    assert_eq!(created(&events), ["anduin-worker-2"], "{events:?}");
    // Beyond --max-workers: refused, saying so, and nothing is created.
    let mut events = Vec::new();
    let why = k.add(2, &mut events).expect_err("5 pods is more than 4");
    assert!(
        why.contains("at most 4 (`--max-workers`)") && why.contains("2 more worker pod(s)"),
        "{why}"
    );
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(fake.state().pods.len(), 3);
    assert_eq!(
        k.add(1, &mut events),
        Ok(vec!["anduin-worker-3".to_string()])
    );
    assert_eq!(k.may_add(), None);
    assert!(k.add(1, &mut events).is_err());
    // Gone with the coordinator, as those it keeps.
    assert_eq!(k.stop_pods().len(), 4);
    assert!(fake.state().pods.is_empty());
    // Without --max-workers it keeps its --workers.
    assert_eq!(scheduler(&fake, dir.path(), 2)?.may_add(), None);
    Ok(())
}

#[test]
fn kubernetes_a_pod_the_api_refuses_refuses_the_growth_with_the_api_s_reason() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let fake = FakeApi::start("streams");
    let mut k = growing(&fake, dir.path(), 2, 5)?;
    k.tick(&BTreeMap::new(), Utc::now());
    // A ResourceQuota of 3 pods: the first added is created, the second refused.
    fake.state().pod_quota = Some(3);
    let mut events = Vec::new();
    let why = k.add(2, &mut events).expect_err("beyond the quota");
    for part in [
        "cannot create pod anduin-worker-3 in namespace streams",
        "exceeded quota: pods, requested: pods=1, used: pods=3, limited: pods=3",
        "ResourceQuota",
        &fake.url(),
    ] {
        assert!(why.contains(part), "`{part}` not in: {why}");
    }
    assert!(!why.contains("RBAC"), "a quota is no RBAC denial: {why}");
    // The pod created for the refused growth is deleted again; it keeps what it kept.
    assert!(
        matches!(&events[..], [
            Event::Created { pod: a },
            Event::Deleted { pod: b, why: Deleted::Withdrawn },
        ] if a == "anduin-worker-2" && b == a),
        "{events:?}"
    );
    assert_eq!(fake.state().pods.len(), 2);
    assert_eq!((k.kept(), k.may_add()), (2, Some((3, 2))));
    let events = k.tick(&BTreeMap::new(), Utc::now());
    assert!(events.is_empty(), "nothing tried again: {events:?}");
    // RBAC that does not let it create pods: named as such.
    fake.state().pod_quota = None;
    fake.state().forbid = Some(
        "pods is forbidden: User \"system:serviceaccount:streams:anduin\" cannot create \
         resource \"pods\" in API group \"\" in the namespace \"streams\""
            .into(),
    );
    let why = k.add(1, &mut Vec::new()).expect_err("forbidden");
    assert!(
        why.contains("RBAC") && why.contains("system:serviceaccount:streams:anduin"),
        "{why}"
    );
    fake.state().forbid = None;
    assert_eq!(
        k.add(1, &mut Vec::new()),
        Ok(vec!["anduin-worker-2".to_string()])
    );
    Ok(())
}

#[test]
fn kubernetes_a_restarted_coordinator_adopts_the_pods_its_predecessor_added() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let fake = FakeApi::start("streams");
    let mut k = growing(&fake, dir.path(), 2, 4)?;
    k.tick(&BTreeMap::new(), Utc::now());
    k.add(1, &mut Vec::new()).map_err(anyhow::Error::msg)?;
    fake.state().set_phase("anduin-worker-2", "Running");
    // Its successor keeps --workers, and leaves the added pod to run (its worker registers
    // again and takes instances as any worker does) rather than deleting it.
    let mut k = growing(&fake, dir.path(), 2, 4)?;
    let events = k.tick(&BTreeMap::new(), Utc::now());
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(fake.state().pods.len(), 3);
    // Asked for one more, it creates the next free name.
    assert_eq!(
        k.add(1, &mut Vec::new()),
        Ok(vec!["anduin-worker-3".to_string()])
    );
    assert_eq!((k.kept(), k.may_add()), (4, None));
    Ok(())
}

#[test]
fn kubernetes_the_coordinator_asks_its_scheduler_thread_for_pods_and_waits_for_them() -> Result<()>
{
    let dir = tempfile::tempdir()?;
    let fake = FakeApi::start("streams");
    let mut b = Background::start(growing(&fake, dir.path(), 1, 3)?)?;
    assert_eq!(b.may_add(), Some((2, 2)));
    // Created by the time the answer comes.
    assert_eq!(b.add(1), Ok(vec!["anduin-worker-1".to_string()]));
    assert!(fake.state().pods.contains_key("anduin-worker-1"));
    assert_eq!(b.may_add(), Some((1, 2)));
    // (No tick yet: the kept worker-0 has no pod.)
    fake.state().pod_quota = Some(1);
    let why = b.add(1).expect_err("beyond the quota");
    assert!(why.contains("exceeded quota"), "{why}");
    assert_eq!(b.may_add(), Some((1, 2)));
    b.stop();
    assert!(fake.state().pods.is_empty());
    assert!(b.add(1).is_err(), "a stopped scheduler adds none");
    Ok(())
}
