//! A W&B run's environment record: the host, OS, Python, git and hardware a run ran on.
//!
//! In: an `EnvironmentRecord` of `wandb/proto/wandb_internal.proto` (wandb 0.19 and later),
//! decoded from a `.wandb` log. An offline run of a recent client writes it in place of
//! `wandb-metadata.json`. Out: the JSON object `wandb-metadata.json` holds for the same run,
//! by the ProtoJSON mapping W&B writes that file with: each field under its JSON name
//! (`startedAt`, `codePath`, `gpu` for `gpu_type`), fields at their default value left out,
//! 64-bit integers as strings, a timestamp as RFC 3339 text in UTC, maps as objects. The
//! record's bookkeeping fields (`writer_id`, `_info`) are left out, as W&B leaves them out of
//! the file. Fields a later client adds are not declared here, and are not read.

use std::collections::BTreeMap;

use prost::Message;
use serde_json::{Map, Value};

/// `EnvironmentRecord`.
#[derive(Clone, PartialEq, Message)]
pub struct Environment {
    #[prost(string, tag = "1")]
    os: String,
    #[prost(string, tag = "2")]
    python: String,
    #[prost(message, optional, tag = "3")]
    started_at: Option<Timestamp>,
    #[prost(string, tag = "4")]
    docker: String,
    #[prost(string, repeated, tag = "5")]
    args: Vec<String>,
    #[prost(string, tag = "6")]
    program: String,
    #[prost(string, tag = "7")]
    code_path: String,
    #[prost(string, tag = "8")]
    code_path_local: String,
    #[prost(message, optional, tag = "9")]
    git: Option<Git>,
    #[prost(string, tag = "10")]
    email: String,
    #[prost(string, tag = "11")]
    root: String,
    #[prost(string, tag = "12")]
    host: String,
    #[prost(string, tag = "13")]
    username: String,
    #[prost(string, tag = "14")]
    executable: String,
    #[prost(string, tag = "15")]
    colab: String,
    #[prost(uint32, tag = "16")]
    cpu_count: u32,
    #[prost(uint32, tag = "17")]
    cpu_count_logical: u32,
    #[prost(string, tag = "18")]
    gpu_type: String,
    #[prost(uint32, tag = "19")]
    gpu_count: u32,
    #[prost(btree_map = "string, message", tag = "20")]
    disk: BTreeMap<String, Disk>,
    #[prost(message, optional, tag = "21")]
    memory: Option<Memory>,
    #[prost(message, optional, tag = "22")]
    cpu: Option<Cpu>,
    #[prost(message, optional, tag = "23")]
    apple: Option<Apple>,
    #[prost(message, repeated, tag = "24")]
    gpu_nvidia: Vec<GpuNvidia>,
    #[prost(string, tag = "25")]
    cuda_version: String,
    #[prost(message, repeated, tag = "26")]
    gpu_amd: Vec<GpuAmd>,
    #[prost(btree_map = "string, string", tag = "27")]
    slurm: BTreeMap<String, String>,
    #[prost(message, optional, tag = "28")]
    trainium: Option<Trainium>,
    #[prost(message, optional, tag = "29")]
    tpu: Option<Tpu>,
    #[prost(message, optional, tag = "30")]
    coreweave: Option<CoreWeave>,
}

/// `google.protobuf.Timestamp`.
#[derive(Clone, PartialEq, Message)]
struct Timestamp {
    #[prost(int64, tag = "1")]
    seconds: i64,
    #[prost(int32, tag = "2")]
    nanos: i32,
}

/// `GitRepoRecord`.
#[derive(Clone, PartialEq, Message)]
struct Git {
    #[prost(string, tag = "1")]
    remote_url: String,
    #[prost(string, tag = "2")]
    commit: String,
}

/// `DiskInfo`, bytes.
#[derive(Clone, PartialEq, Message)]
struct Disk {
    #[prost(uint64, tag = "1")]
    total: u64,
    #[prost(uint64, tag = "2")]
    used: u64,
}

/// `MemoryInfo`, bytes.
#[derive(Clone, PartialEq, Message)]
struct Memory {
    #[prost(uint64, tag = "1")]
    total: u64,
}

/// `CpuInfo`.
#[derive(Clone, PartialEq, Message)]
struct Cpu {
    #[prost(uint32, tag = "1")]
    count: u32,
    #[prost(uint32, tag = "2")]
    count_logical: u32,
    #[prost(string, tag = "3")]
    model: String,
}

/// `AppleInfo`.
#[derive(Clone, PartialEq, Message)]
struct Apple {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(uint32, tag = "2")]
    ecpu_cores: u32,
    #[prost(uint32, tag = "3")]
    pcpu_cores: u32,
    #[prost(uint32, tag = "4")]
    gpu_cores: u32,
    #[prost(uint32, tag = "5")]
    memory_gb: u32,
    #[prost(uint64, tag = "6")]
    swap_total_bytes: u64,
    #[prost(uint64, tag = "7")]
    ram_total_bytes: u64,
    #[prost(string, tag = "8")]
    mac_model: String,
}

/// `GpuNvidiaInfo`.
#[derive(Clone, PartialEq, Message)]
struct GpuNvidia {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(uint64, tag = "2")]
    memory_total: u64,
    #[prost(uint32, tag = "3")]
    cuda_cores: u32,
    #[prost(string, tag = "4")]
    architecture: String,
    #[prost(string, tag = "5")]
    uuid: String,
    #[prost(string, tag = "6")]
    pci_bus_id: String,
    /// Explicit presence (`optional`): NUMA node 0 is not "not said".
    #[prost(uint32, optional, tag = "7")]
    numa_node: Option<u32>,
}

/// `GpuAmdInfo`: every field text.
#[derive(Clone, PartialEq, Message)]
struct GpuAmd {
    #[prost(string, tag = "1")]
    id: String,
    #[prost(string, tag = "2")]
    unique_id: String,
    #[prost(string, tag = "3")]
    vbios_version: String,
    #[prost(string, tag = "4")]
    performance_level: String,
    #[prost(string, tag = "5")]
    gpu_overdrive: String,
    #[prost(string, tag = "6")]
    gpu_memory_overdrive: String,
    #[prost(string, tag = "7")]
    max_power: String,
    #[prost(string, tag = "8")]
    series: String,
    #[prost(string, tag = "9")]
    model: String,
    #[prost(string, tag = "10")]
    vendor: String,
    #[prost(string, tag = "11")]
    sku: String,
    #[prost(string, tag = "12")]
    sclk_range: String,
    #[prost(string, tag = "13")]
    mclk_range: String,
}

/// `TrainiumInfo`.
#[derive(Clone, PartialEq, Message)]
struct Trainium {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    vendor: String,
    #[prost(uint32, tag = "3")]
    neuron_device_count: u32,
    #[prost(uint32, tag = "4")]
    neuroncore_per_device_count: u32,
}

/// `TPUInfo`.
#[derive(Clone, PartialEq, Message)]
struct Tpu {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(uint32, tag = "2")]
    hbm_gib: u32,
    #[prost(uint32, tag = "3")]
    devices_per_chip: u32,
    #[prost(uint32, tag = "4")]
    count: u32,
}

/// `CoreWeaveInfo`.
#[derive(Clone, PartialEq, Message)]
struct CoreWeave {
    #[prost(string, tag = "1")]
    cluster_name: String,
    #[prost(string, tag = "2")]
    org_id: String,
    #[prost(string, tag = "3")]
    region: String,
}

impl Environment {
    /// Adds a later record of the run to this one, as protobuf merges messages: a later
    /// field that is set replaces the earlier, lists are appended, maps merged by key.
    pub fn merge_later(&mut self, later: &Environment) {
        // re-encoding leaves out the later record's unset fields, so they replace nothing
        // (`merge` only fails on bytes that are no message, and these were just encoded)
        let _ = Message::merge(self, later.encode_to_vec().as_slice());
    }

    /// The record as `wandb-metadata.json` would hold it (see the module's doc).
    ///
    /// Errors: a message naming `started_at` when it is no timestamp ProtoJSON can write
    /// (nanoseconds outside 0 to 999,999,999, or a time outside the years 1 to 9999).
    pub fn to_json(&self) -> Result<Map<String, Value>, String> {
        let mut o = Obj::default();
        o.text("os", &self.os);
        o.text("python", &self.python);
        if let Some(t) = &self.started_at {
            o.0.insert("startedAt".into(), Value::String(rfc3339(t)?));
        }
        o.text("docker", &self.docker);
        o.texts("args", &self.args);
        o.text("program", &self.program);
        o.text("codePath", &self.code_path);
        o.text("codePathLocal", &self.code_path_local);
        o.message("git", self.git.as_ref(), |g, o| {
            o.text("remote", &g.remote_url);
            o.text("commit", &g.commit);
        });
        o.text("email", &self.email);
        o.text("root", &self.root);
        o.text("host", &self.host);
        o.text("username", &self.username);
        o.text("executable", &self.executable);
        o.text("colab", &self.colab);
        o.u32("cpu_count", self.cpu_count);
        o.u32("cpu_count_logical", self.cpu_count_logical);
        o.text("gpu", &self.gpu_type);
        o.u32("gpu_count", self.gpu_count);
        if !self.disk.is_empty() {
            let disks = self
                .disk
                .iter()
                .map(|(path, d)| {
                    let mut o = Obj::default();
                    o.u64("total", d.total);
                    o.u64("used", d.used);
                    (path.clone(), Value::Object(o.0))
                })
                .collect();
            o.0.insert("disk".into(), Value::Object(disks));
        }
        o.message("memory", self.memory.as_ref(), |m, o| o.u64("total", m.total));
        o.message("cpu", self.cpu.as_ref(), |c, o| {
            o.u32("count", c.count);
            o.u32("countLogical", c.count_logical);
            o.text("model", &c.model);
        });
        o.message("apple", self.apple.as_ref(), |a, o| {
            o.text("name", &a.name);
            o.u32("ecpuCores", a.ecpu_cores);
            o.u32("pcpuCores", a.pcpu_cores);
            o.u32("gpuCores", a.gpu_cores);
            o.u32("memoryGb", a.memory_gb);
            o.u64("swapTotalBytes", a.swap_total_bytes);
            o.u64("ramTotalBytes", a.ram_total_bytes);
            o.text("macModel", &a.mac_model);
        });
        o.list("gpu_nvidia", &self.gpu_nvidia, |g, o| {
            o.text("name", &g.name);
            o.u64("memoryTotal", g.memory_total);
            o.u32("cudaCores", g.cuda_cores);
            o.text("architecture", &g.architecture);
            o.text("uuid", &g.uuid);
            o.text("pciBusId", &g.pci_bus_id);
            if let Some(n) = g.numa_node {
                o.0.insert("numaNode".into(), Value::from(n));
            }
        });
        o.text("cudaVersion", &self.cuda_version);
        o.list("gpu_amd", &self.gpu_amd, |g, o| {
            o.text("id", &g.id);
            o.text("uniqueId", &g.unique_id);
            o.text("vbiosVersion", &g.vbios_version);
            o.text("performanceLevel", &g.performance_level);
            o.text("gpuOverdrive", &g.gpu_overdrive);
            o.text("gpuMemoryOverdrive", &g.gpu_memory_overdrive);
            o.text("maxPower", &g.max_power);
            o.text("series", &g.series);
            o.text("model", &g.model);
            o.text("vendor", &g.vendor);
            o.text("sku", &g.sku);
            o.text("sclkRange", &g.sclk_range);
            o.text("mclkRange", &g.mclk_range);
        });
        if !self.slurm.is_empty() {
            let vars = self.slurm.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
            o.0.insert("slurm".into(), Value::Object(vars));
        }
        o.message("trainium", self.trainium.as_ref(), |t, o| {
            o.text("name", &t.name);
            o.text("vendor", &t.vendor);
            o.u32("neuronDeviceCount", t.neuron_device_count);
            o.u32("neuroncorePerDeviceCount", t.neuroncore_per_device_count);
        });
        o.message("tpu", self.tpu.as_ref(), |t, o| {
            o.text("name", &t.name);
            o.u32("hbmGib", t.hbm_gib);
            o.u32("devicesPerChip", t.devices_per_chip);
            o.u32("count", t.count);
        });
        o.message("coreweave", self.coreweave.as_ref(), |c, o| {
            o.text("clusterName", &c.cluster_name);
            o.text("orgId", &c.org_id);
            o.text("region", &c.region);
        });
        Ok(o.0)
    }
}

/// A JSON object built by ProtoJSON's rules: a field at its default value is left out.
#[derive(Default)]
struct Obj(Map<String, Value>);

impl Obj {
    fn text(&mut self, key: &str, v: &str) {
        if !v.is_empty() {
            self.0.insert(key.into(), Value::String(v.into()));
        }
    }

    fn texts(&mut self, key: &str, v: &[String]) {
        if !v.is_empty() {
            self.0.insert(key.into(), Value::Array(v.iter().map(|s| Value::String(s.clone())).collect()));
        }
    }

    fn u32(&mut self, key: &str, v: u32) {
        if v != 0 {
            self.0.insert(key.into(), Value::from(v));
        }
    }

    /// A 64-bit integer, as text (JavaScript's numbers cannot hold every one).
    fn u64(&mut self, key: &str, v: u64) {
        if v != 0 {
            self.0.insert(key.into(), Value::String(v.to_string()));
        }
    }

    /// A nested message: present (even empty) when it was set.
    fn message<T>(&mut self, key: &str, v: Option<&T>, fill: impl Fn(&T, &mut Obj)) {
        if let Some(v) = v {
            let mut o = Obj::default();
            fill(v, &mut o);
            self.0.insert(key.into(), Value::Object(o.0));
        }
    }

    fn list<T>(&mut self, key: &str, v: &[T], fill: impl Fn(&T, &mut Obj)) {
        if !v.is_empty() {
            let items = v
                .iter()
                .map(|x| {
                    let mut o = Obj::default();
                    fill(x, &mut o);
                    Value::Object(o.0)
                })
                .collect();
            self.0.insert(key.into(), Value::Array(items));
        }
    }
}

/// A timestamp as ProtoJSON writes it (see [`super::rows::exact_time`]).
///
/// Errors: what is wrong with a timestamp outside ProtoJSON's range (years 1 to 9999) or
/// whose nanoseconds are outside 0 to 999,999,999.
fn rfc3339(t: &Timestamp) -> Result<String, String> {
    super::rows::exact_time(t.seconds, t.nanos).ok_or_else(|| {
        format!(
            "started_at: seconds {} and nanos {} are no timestamp (years 1 to 9999, nanos 0 to 999,999,999)",
            t.seconds, t.nanos
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_written_as_protojson_writes_them() {
        let t = |seconds, nanos| rfc3339(&Timestamp { seconds, nanos }).unwrap_or_else(|e| e);
        assert_eq!(t(0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(t(1_728_772_405, 977_172_000), "2024-10-12T22:33:25.977172Z");
        assert_eq!(t(951_782_400, 125_000_000), "2000-02-29T00:00:00.125Z");
        assert_eq!(t(-1, 1), "1969-12-31T23:59:59.000000001Z");
        assert_eq!(t(-62_135_596_800, 0), "0001-01-01T00:00:00Z");
        assert_eq!(t(253_402_300_799, 999_999_999), "9999-12-31T23:59:59.999999999Z");
        // what ProtoJSON refuses is said, not clamped
        for (s, n) in [(100, -1), (100, 1_000_000_000), (253_402_300_800, 0), (-62_135_596_801, 0)] {
            assert!(t(s, n).starts_with("started_at: seconds"), "{s} {n}: {}", t(s, n));
        }
    }

    #[test]
    fn defaults_are_left_out_and_a_later_record_merges_in() {
        let mut env = Environment {
            os: "Linux".into(),
            cpu_count: 8,
            memory: Some(Memory { total: 1 << 40 }),
            disk: BTreeMap::from([("/".into(), Disk { total: 10, used: 0 })]),
            ..Default::default()
        };
        let later = Environment { host: "node-1".into(), args: vec!["--lr=1".into()], ..Default::default() };
        env.merge_later(&later);
        let json = Value::Object(env.to_json().unwrap());
        assert_eq!(
            json,
            serde_json::json!({
                "os": "Linux", "args": ["--lr=1"], "host": "node-1", "cpu_count": 8,
                "disk": {"/": {"total": "10"}}, "memory": {"total": "1099511627776"}
            })
        );
    }
}
