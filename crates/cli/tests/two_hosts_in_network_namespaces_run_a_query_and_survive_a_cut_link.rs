//! Two "hosts" as network namespaces joined by a veth pair: the coordinator and one worker on
//! the first, another worker on the second, the cluster's secret on both. A query whose
//! tasks span both hosts runs over the link; then the link is cut (set down, so nothing
//! closes: the second host just goes silent). The coordinator declares the silent worker
//! dead when its heartbeats stop, and the query recovers on the first host from its last
//! checkpoint — the silent worker's instances restored there (per-task recovery, the
//! default), or the whole query rolled back when that cannot apply: the output equals an
//! uninterrupted embedded run's.
//!
//! Needs root (network namespaces); the test command runs as root in CI.

use crate::common;

use std::process::{Command, Stdio};

use common::cluster::windowed_generator;
use common::{anduin_ok, output_rows, wait_until, ChildGuard};

/// Two namespaces and the veth pair between them, removed when dropped.
struct Hosts {
    a: String,
    b: String,
    link_a: String,
    ip_a: String,
    ip_b: String,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip runs");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Hosts {
    fn new() -> Self {
        let id = std::process::id();
        let (a, b) = (format!("anduin-{id}-a"), format!("anduin-{id}-b"));
        let (link_a, link_b) = (format!("an{id}a"), format!("an{id}b"));
        let net = 16 + (id % 200);
        let (ip_a, ip_b) = (format!("10.231.{net}.1"), format!("10.231.{net}.2"));
        let hosts = Self {
            a: a.clone(),
            b: b.clone(),
            link_a: link_a.clone(),
            ip_a: ip_a.clone(),
            ip_b: ip_b.clone(),
        };
        ip(&["netns", "add", &a]);
        ip(&["netns", "add", &b]);
        ip(&[
            "link", "add", &link_a, "type", "veth", "peer", "name", &link_b,
        ]);
        ip(&["link", "set", &link_a, "netns", &a]);
        ip(&["link", "set", &link_b, "netns", &b]);
        for (ns, link, addr) in [(&a, &link_a, &ip_a), (&b, &link_b, &ip_b)] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", link]);
            ip(&["-n", ns, "link", "set", link, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        hosts
    }

    /// `anduin ARGS` inside namespace `ns`, its stdin closed.
    fn anduin(&self, ns: &str, dir: &std::path::Path, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, env!("CARGO_BIN_EXE_anduin")])
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null());
        c
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end in it, and with it the pair.
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

#[test]
fn two_hosts_in_network_namespaces_run_a_query_and_survive_a_cut_link() {
    assert!(
        std::fs::read_to_string("/proc/self/status")
            .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))),
        "this test makes network namespaces and needs root: run it as root (scripts/test.sh does in CI)"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(
        d.join("q.flow"),
        windowed_generator(
            3,
            80_000,
            20_000,
            r#"param kind = "tumbling" param size = "100ms""#,
        ),
    )
    .expect("query");
    std::fs::write(d.join("secret"), "two hosts\n").expect("secret");
    anduin_ok(d, &["run", "q.flow", "--var", "OUTPUT=reference.csv"]);
    let expected = output_rows(&d.join("reference.csv"));

    let hosts = Hosts::new();
    let listen = format!("{}:0", hosts.ip_a);
    let mut procs = Vec::new();
    procs.push(ChildGuard(
        hosts
            .anduin(
                &hosts.a,
                d,
                &["coordinator", "--listen", &listen, "--state-dir", "state"],
            )
            .args(["--checkpoint-store", "ck", "--address-file", "addr"])
            .args([
                "--cluster-secret-file",
                "secret",
                "--heartbeat-timeout",
                "2s",
            ])
            .stderr(
                std::fs::File::create(d.join("coordinator.log"))
                    .map_or_else(|_| Stdio::null(), Stdio::from),
            )
            .spawn()
            .expect("the coordinator starts"),
    ));
    wait_until("the coordinator listens", || d.join("addr").exists());
    let addr = std::fs::read_to_string(d.join("addr")).expect("addr");
    let addr = addr.trim().to_string();
    for (ns, host, name) in [(&hosts.a, &hosts.ip_a, "wa"), (&hosts.b, &hosts.ip_b, "wb")] {
        procs.push(ChildGuard(
            hosts
                .anduin(ns, d, &["worker", "--coordinator", &addr, "--name", name])
                .args([
                    "--data-host",
                    host,
                    "--slots",
                    "8",
                    "--heartbeat-interval",
                    "200ms",
                ])
                .args(["--cluster-secret-file", "secret", "--work-dir"])
                .arg(d.join(name))
                .stderr(Stdio::null())
                .spawn()
                .expect("a worker starts"),
        ));
    }
    let status = |query: Option<&str>| -> serde_json::Value {
        let mut args = vec!["status", "--coordinator", &addr, "--json"];
        args.extend(["--cluster-secret-file", "secret"]);
        args.extend(query);
        let out = hosts.anduin(&hosts.a, d, &args).output().expect("status");
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    };
    wait_until("both workers joined", || {
        status(None)["workers"]
            .as_array()
            .is_some_and(|w| w.iter().filter(|w| w["alive"] == true).count() == 2)
    });
    let submit = ChildGuard(
        hosts
            .anduin(
                &hosts.a,
                d,
                &["submit", "q.flow", "--coordinator", &addr, "--wait"],
            )
            .args(["--cluster-secret-file", "secret", "--var", "OUTPUT=out"])
            .args([
                "--parallelism",
                "2",
                "--no-chaining",
                "--checkpoint-every",
                "5000",
            ])
            .stderr(Stdio::piped())
            .spawn()
            .expect("submit starts"),
    );
    wait_until("a checkpoint with tasks on both hosts", || {
        let s = status(Some("q"));
        s["last_checkpoint"].as_u64().is_some_and(|e| e >= 2)
            && s["placement"].as_object().is_some_and(|p| p.len() == 2)
    });
    assert_ne!(
        status(Some("q"))["state"],
        "finished",
        "the cut must come mid-run"
    );
    ip(&["-n", &hosts.a, "link", "set", &hosts.link_a, "down"]);

    let out = submit.wait_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let s = status(Some("q"));
    let log = std::fs::read_to_string(d.join("coordinator.log")).unwrap_or_default();
    assert!(
        log.contains("instances restored") || s["attempt"].as_u64().is_some_and(|a| a >= 2),
        "the query recovered (per task, or as a whole): {s}\n{log}"
    );
    assert!(
        s["placement"]
            .as_object()
            .is_some_and(|p| p.keys().all(|w| w == "wa")),
        "the last attempt ran on the host left: {s}"
    );
    let got = output_rows(&d.join("out"));
    assert_eq!(got.len(), expected.len(), "rows lost or duplicated");
    assert!(
        got == expected,
        "the output differs from the uninterrupted run"
    );
    drop(procs);
}
