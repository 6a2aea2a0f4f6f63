//! The worker pods, as JSON: the one the scheduler creates ([`WorkerPod::manifest`]) and
//! the facts it reads back from a listed one ([`PodFacts::read`]).

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// The label every pod anduin manages carries (Kubernetes' recommended label).
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// The label naming the coordinator (its `--kube-name`) whose scheduler keeps the pod.
pub const COORDINATOR: &str = "anduin.io/coordinator";
/// The label naming the worker the pod runs (`anduin worker --name`).
pub const WORKER: &str = "anduin.io/worker";

/// What a worker pod is made of.
#[derive(Clone, Debug)]
pub struct WorkerPod<'a> {
    /// The coordinator's `--kube-name`: the pods' label, and their names' prefix.
    pub coordinator: &'a str,
    /// The worker's name, also the pod's.
    pub name: &'a str,
    /// The image, with `anduin` on its PATH.
    pub image: &'a str,
    /// The coordinator's address as the workers reach it (`IP:PORT`).
    pub coordinator_address: &'a str,
    /// The worker's slots.
    pub slots: u32,
    /// The Secret whose keys become the worker's environment (ANDUIN_CLUSTER_SECRET, AWS_*).
    pub env_secret: &'a str,
}

impl WorkerPod<'_> {
    /// The label selector of every pod the coordinator `coordinator` keeps.
    pub fn selector(coordinator: &str) -> String {
        format!("{MANAGED_BY}=anduin,{COORDINATOR}={coordinator}")
    }

    /// The pod, as `POST /api/v1/namespaces/NS/pods` takes it. The pod is not restarted in
    /// place (`restartPolicy: Never`): a worker that exits leaves its pod `Failed`, and the
    /// scheduler replaces the pod.
    pub fn manifest(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": self.name,
                "labels": {
                    MANAGED_BY: "anduin",
                    COORDINATOR: self.coordinator,
                    WORKER: self.name,
                },
            },
            "spec": {
                "restartPolicy": "Never",
                // Workers need no access to the API.
                "automountServiceAccountToken": false,
                "containers": [{
                    "name": "worker",
                    "image": self.image,
                    "command": [
                        "anduin", "worker",
                        "--coordinator", self.coordinator_address,
                        "--name", self.name,
                        "--slots", self.slots.to_string(),
                        // Other workers' executors reach this one's at the pod's IP
                        // (Kubernetes expands $(POD_IP) from the environment below).
                        "--data-host", "$(POD_IP)",
                        "--work-dir", "/tmp/anduin-worker",
                    ],
                    "env": [{
                        "name": "POD_IP",
                        "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
                    }],
                    "envFrom": [{"secretRef": {"name": self.env_secret}}],
                }],
            },
        })
    }
}

/// A pod's phase (`status.phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Accepted, its containers not all started (scheduling, pulling the image).
    Pending,
    /// Bound to a node, its container started.
    Running,
    /// Its containers ended, all with success.
    Succeeded,
    /// Its containers ended, one at least with a failure.
    Failed,
    /// Its node stopped reporting.
    Unknown,
}

/// What the scheduler knows of one of its pods, from a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodFacts {
    /// The pod's name (the worker's).
    pub name: String,
    pub phase: Phase,
    /// It is being deleted (`metadata.deletionTimestamp`).
    pub terminating: bool,
    /// When it was created (`metadata.creationTimestamp`).
    pub created: Option<DateTime<Utc>>,
    /// Why its container waits, when that is an error a user must fix (`ErrImagePull`,
    /// `CreateContainerConfigError`, …), with Kubernetes' message.
    pub stuck: Option<String>,
}

impl PodFacts {
    /// The facts of a pod of a `PodList`'s `items`; `None` for one without a name.
    pub fn read(pod: &Value) -> Option<Self> {
        let name = pod.pointer("/metadata/name")?.as_str()?.to_string();
        let phase = match pod.pointer("/status/phase").and_then(Value::as_str) {
            Some("Running") => Phase::Running,
            Some("Succeeded") => Phase::Succeeded,
            Some("Failed") => Phase::Failed,
            Some("Unknown") => Phase::Unknown,
            _ => Phase::Pending,
        };
        let created = pod
            .pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc));
        let stuck = pod
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.pointer("/state/waiting"))
            .find_map(|w| {
                let reason = w.get("reason")?.as_str()?;
                let wrong = matches!(
                    reason,
                    "ErrImagePull"
                        | "ImagePullBackOff"
                        | "InvalidImageName"
                        | "CreateContainerConfigError"
                        | "CreateContainerError"
                        | "CrashLoopBackOff"
                );
                let message = w.get("message").and_then(Value::as_str).unwrap_or("");
                wrong.then(|| format!("{reason}: {message}"))
            });
        Some(Self {
            name,
            phase,
            terminating: pod.pointer("/metadata/deletionTimestamp").is_some(),
            created,
            stuck,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kubernetes_worker_pod_is_labelled_and_runs_anduin_worker() {
        let pod = WorkerPod {
            coordinator: "anduin",
            name: "anduin-worker-0",
            image: "example.org/anduin:1",
            coordinator_address: "10.0.0.7:7400",
            slots: 2,
            env_secret: "anduin",
        }
        .manifest();
        assert_eq!(pod["metadata"]["labels"][WORKER], "anduin-worker-0");
        assert_eq!(pod["metadata"]["labels"][COORDINATOR], "anduin");
        assert_eq!(pod["metadata"]["labels"][MANAGED_BY], "anduin");
        let command: Vec<&str> = pod["spec"]["containers"][0]["command"]
            .as_array()
            .expect("a command")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(
            command[..8],
            [
                "anduin",
                "worker",
                "--coordinator",
                "10.0.0.7:7400",
                "--name",
                "anduin-worker-0",
                "--slots",
                "2"
            ]
        );
        assert_eq!(
            WorkerPod::selector("anduin"),
            "app.kubernetes.io/managed-by=anduin,anduin.io/coordinator=anduin"
        );
    }

    /// deploy/kubernetes/worker-pod.json is the pod the scheduler creates for the manifests
    /// there (scripts/test.sh validates it); `UPDATE_GOLDEN=1` rewrites it.
    #[test]
    fn kubernetes_worker_pod_of_the_deploy_manifests_is_the_one_created() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../deploy/kubernetes/worker-pod.json"
        );
        let pod = WorkerPod {
            coordinator: "anduin",
            name: "anduin-worker-0",
            image: "anduin:latest",
            coordinator_address: "10.96.0.20:7400",
            slots: 4,
            env_secret: "anduin",
        }
        .manifest();
        let actual = format!("{:#}\n", pod);
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(path, &actual).expect("the golden file written");
        }
        let expected = std::fs::read_to_string(path).unwrap_or_default();
        assert_eq!(
            actual, expected,
            "{path} differs from the pod the scheduler creates (UPDATE_GOLDEN=1 rewrites it)"
        );
    }

    #[test]
    fn kubernetes_pod_facts_are_read_from_a_listed_pod() {
        let pod = json!({
            "metadata": {
                "name": "w-1",
                "creationTimestamp": "2026-01-02T03:04:05Z",
                "deletionTimestamp": "2026-01-02T03:05:00Z",
            },
            "status": {
                "phase": "Pending",
                "containerStatuses": [{"state": {"waiting": {
                    "reason": "ImagePullBackOff", "message": "no such image"}}}],
            },
        });
        let facts = PodFacts::read(&pod).expect("named");
        assert_eq!(facts.phase, Phase::Pending);
        assert!(facts.terminating);
        assert_eq!(
            facts.created.map(|t| t.to_rfc3339()).as_deref(),
            Some("2026-01-02T03:04:05+00:00")
        );
        assert_eq!(
            facts.stuck.as_deref(),
            Some("ImagePullBackOff: no such image")
        );
        let starting = json!({"metadata": {"name": "w-2"}, "status": {"containerStatuses": [
            {"state": {"waiting": {"reason": "ContainerCreating"}}}]}});
        assert_eq!(PodFacts::read(&starting).expect("named").stuck, None);
        assert_eq!(PodFacts::read(&json!({"metadata": {}})), None);
    }
}
