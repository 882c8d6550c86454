//! Log replay against a model: random histories of 30 to 60 commits over eight paths, with
//! deletion vectors, `txn`, `domainMetadata` and `metaData` changes, optional checkpoints of
//! every kind, an optional log compaction file, an optional `_last_checkpoint` hint and an
//! optional cleanup of the commits before the first checkpoint. At several versions the
//! snapshot must equal a plain in-memory replay of the spec's reconciliation rules (spec
//! "Action Reconciliation"; catalogue C-01..C-15, C-17, C-18, C-21).

use crate::support::common::*;
use futures::executor::block_on;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use arrow_array::{Array, Int32Array, StringArray, StructArray};
use arrow_schema::{Schema, SchemaRef};
use deltalog_core::log::last_checkpoint::{write_last_checkpoint, LastCheckpointHint};
use deltalog_core::log::path::{
    classic_checkpoint_file_name, commit_file_name, compaction_file_name,
    multi_part_checkpoint_file_name, uuid_checkpoint_file_name, CheckpointFormat,
};
use deltalog_core::{Error, Snapshot, SnapshotAt, Table};
use proptest::prelude::*;
use serde_json::{json, Value};

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn replay_matches_the_model(seed in history_seed()) {
        check_history(&seed);
    }
}

/// The data files of the histories. Keys use the decoded path (catalogue C-21).
const PATHS: [&str; 8] = [
    "f0.parquet",
    "f1.parquet",
    "f2.parquet",
    "f3.parquet",
    "d=1/f4.parquet",
    "d=1/f5.parquet",
    "f6.parquet",
    "part%20x/f7.parquet",
];

/// Inline deletion vector payloads (Z85 text; the content is never decoded here).
const DVS: [&str; 4] = ["wHPsh", "0rr91", "a.b:c", "Zz+=^"];

const APPS: [&str; 3] = ["app-0", "app-1", "app-2"];
const DOMAINS: [&str; 3] = ["d0", "d1", "d2"];

/// How one commit is drawn: file operations `(path index, operation, choice)`, `txn`s
/// `(app index, version)`, domains `(domain index, configuration or removal)`, and perhaps a
/// new `metaData`.
#[derive(Debug, Clone)]
struct CommitSeed {
    files: Vec<(usize, u8, u8)>,
    txns: Vec<(usize, i64)>,
    domains: Vec<(usize, Option<u8>)>,
    metadata: Option<u8>,
}

/// How one history is drawn. Positions are taken modulo the number of commits.
#[derive(Debug, Clone)]
struct HistorySeed {
    commits: Vec<CommitSeed>,
    /// The table has the `v2Checkpoint` feature: checkpoints are classic or UUID-named V2;
    /// otherwise classic or multi-part.
    v2: bool,
    checkpoints: Vec<(usize, u8)>,
    compaction: Option<(usize, usize)>,
    cleanup: bool,
    hint: bool,
    queries: Vec<usize>,
    refresh_from: usize,
}

fn commit_seed() -> impl Strategy<Value = CommitSeed> {
    (
        prop::collection::vec((0..PATHS.len(), any::<u8>(), any::<u8>()), 0..5),
        prop::collection::vec((0..APPS.len(), 0..100i64), 0..2),
        prop::collection::vec((0..DOMAINS.len(), prop::option::of(any::<u8>())), 0..2),
        prop::option::weighted(0.1, any::<u8>()),
    )
        .prop_map(|(files, txns, domains, metadata)| CommitSeed {
            files,
            txns,
            domains,
            metadata,
        })
}

fn history_seed() -> impl Strategy<Value = HistorySeed> {
    (
        prop::collection::vec(commit_seed(), 30..=60),
        any::<bool>(),
        prop::collection::vec((0..1000usize, any::<u8>()), 0..3),
        prop::option::weighted(0.4, (0..1000usize, 0..1000usize)),
        prop::bool::weighted(0.3),
        any::<bool>(),
        prop::collection::vec(0..1000usize, 3..5),
        0..1000usize,
    )
        .prop_map(
            |(commits, v2, checkpoints, compaction, cleanup, hint, queries, refresh_from)| {
                HistorySeed {
                    commits,
                    v2,
                    checkpoints,
                    compaction,
                    cleanup,
                    hint,
                    queries,
                    refresh_from,
                }
            },
        )
}

/// Writes the history, then checks the snapshots at several versions and a refresh.
fn check_history(seed: &HistorySeed) {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::new(dir.path());
    let history = History::build(seed, &log.root_url());
    let last = history.commits.len() - 1;
    for (version, actions) in history.commits.iter().enumerate() {
        log.write(&commit_file_name(version as u64), &json_lines(actions));
    }
    let mut checkpoint_versions = BTreeSet::new();
    for (position, kind) in &seed.checkpoints {
        let version = position % history.commits.len();
        if checkpoint_versions.insert(version) {
            log.checkpoint(version as u64, &history.states[version], seed.v2, *kind);
        }
    }
    if let Some((a, b)) = seed.compaction {
        let (a, b) = (a % (last + 1), b % (last + 1));
        let (first, end) = (a.min(b), a.max(b));
        log.write(
            &compaction_file_name(first as u64, end as u64),
            &json_lines(&history.compacted(first, end)),
        );
    }
    let earliest = match checkpoint_versions.first() {
        Some(&first) if seed.cleanup => {
            for version in 0..first {
                std::fs::remove_file(log.dir.join(commit_file_name(version as u64))).unwrap();
            }
            first
        }
        _ => 0,
    };
    if let (true, Some(&newest)) = (seed.hint, checkpoint_versions.last()) {
        let hint = LastCheckpointHint {
            version: newest as u64,
            ..LastCheckpointHint::default()
        };
        log.write("_last_checkpoint", &write_last_checkpoint(&hint).unwrap());
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let table = runtime
        .block_on(Table::open(dir.path().to_str().unwrap(), &HashMap::new()))
        .unwrap();
    let mut targets: Vec<Option<usize>> = seed
        .queries
        .iter()
        .map(|query| Some(query % (last + 1)))
        .collect();
    targets.push(None);
    for target in targets {
        let at = target.map_or(SnapshotAt::Latest, |v| SnapshotAt::Version(v as u64));
        let result = runtime.block_on(table.snapshot(at));
        let version = target.unwrap_or(last);
        if version < earliest {
            let error = result.unwrap_err();
            assert!(
                matches!(error, Error::VersionNotFound { .. }),
                "version {version} (commits before {earliest} cleaned up): {error:?}"
            );
            continue;
        }
        let snapshot = result.unwrap_or_else(|error| panic!("version {version}: {error}"));
        assert_eq!(snapshot.version(), version as u64);
        assert_matches_model(&runtime, &snapshot, &history.states[version], version);
    }

    let from = (seed.refresh_from % (last + 1)).max(earliest);
    let old = runtime
        .block_on(table.snapshot(SnapshotAt::Version(from as u64)))
        .unwrap();
    let refreshed = runtime.block_on(old.refresh()).unwrap();
    assert_eq!(refreshed.version(), last as u64);
    assert_matches_model(&runtime, &refreshed, &history.states[last], last);
}

fn assert_matches_model(
    runtime: &tokio::runtime::Runtime,
    snapshot: &Snapshot,
    model: &State,
    version: usize,
) {
    let expected_live: BTreeSet<Key> = model.live.keys().cloned().collect();
    let expected_dead: BTreeSet<Key> = model.tombstones.keys().cloned().collect();
    assert_eq!(
        live_keys(runtime, snapshot),
        expected_live,
        "live files at {version}"
    );
    assert_eq!(
        block_on(snapshot.num_files()).unwrap(),
        expected_live.len(),
        "file count at {version}"
    );
    assert_eq!(
        tombstone_keys(snapshot),
        expected_dead,
        "tombstones at {version}"
    );
    let txns: BTreeMap<String, i64> = snapshot.transactions().into_iter().collect();
    assert_eq!(txns, model.txns, "txns at {version}");
    let domains: BTreeMap<String, String> = snapshot.domains().into_iter().collect();
    assert_eq!(domains, model.live_domains(), "domains at {version}");
    for (domain, configuration) in &model.domains {
        assert_eq!(
            snapshot.domain_metadata(domain),
            configuration.as_deref(),
            "domain {domain} at {version}"
        );
    }
    let configuration: BTreeMap<String, String> = snapshot
        .metadata()
        .configuration
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    assert_eq!(
        configuration, model.configuration,
        "configuration at {version}"
    );
}

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

/// A logical file: the decoded path and the deletion vector's unique id (catalogue C-07).
type Key = (String, Option<String>);

/// The state of one version by the spec's rules, with the action that put each entry there
/// (what a checkpoint of that version holds).
#[derive(Debug, Clone, Default)]
struct State {
    live: BTreeMap<Key, Value>,
    tombstones: BTreeMap<Key, Value>,
    txns: BTreeMap<String, i64>,
    /// `None`: removed.
    domains: BTreeMap<String, Option<String>>,
    configuration: BTreeMap<String, String>,
    protocol: Value,
}

impl State {
    /// C-08: the newest action per key counts; an add moves the key out of the tombstones.
    fn add(&mut self, key: Key, action: Value) {
        self.tombstones.remove(&key);
        self.live.insert(key, action);
    }

    /// C-08: a remove moves the key out of the live set.
    fn remove(&mut self, key: Key, action: Value) {
        self.live.remove(&key);
        self.tombstones.insert(key, action);
    }

    fn live_domains(&self) -> BTreeMap<String, String> {
        self.domains
            .iter()
            .filter_map(|(domain, configuration)| {
                configuration.clone().map(|c| (domain.clone(), c))
            })
            .collect()
    }

    /// The live keys of `path`.
    fn live_of(&self, path: &str) -> Vec<Key> {
        self.live
            .keys()
            .filter(|(live_path, _)| live_path == path)
            .cloned()
            .collect()
    }

    /// The actions of a checkpoint of this state (V1 layout; the caller adds V2 parts).
    fn checkpoint_actions(&self) -> (Vec<Value>, Vec<Value>) {
        let mut others = vec![self.protocol.clone(), metadata(&self.configuration)];
        others.extend(self.txns.iter().map(|(app, version)| txn(app, *version)));
        others.extend(
            self.live_domains()
                .iter()
                .map(|(domain, configuration)| domain_action(domain, Some(configuration))),
        );
        let files = self
            .live
            .values()
            .chain(self.tombstones.values())
            .cloned()
            .collect();
        (others, files)
    }
}

/// The commits of a history and the model state after each.
struct History {
    commits: Vec<Vec<Value>>,
    states: Vec<State>,
    root_url: String,
}

impl History {
    fn build(seed: &HistorySeed, root_url: &str) -> History {
        let protocol = if seed.v2 {
            protocol_v2()
        } else {
            protocol_dv()
        };
        let mut state = State {
            protocol: protocol.clone(),
            ..State::default()
        };
        let mut commits = Vec::new();
        let mut states = Vec::new();
        for (version, commit_seed) in seed.commits.iter().enumerate() {
            let mut actions =
                vec![json!({"commitInfo": {"timestamp": version, "operation": "WRITE"}})];
            let mut commit_seed = commit_seed.clone();
            if version == 0 {
                // The first commit holds the protocol and the one metaData it may have.
                if let Some(value) = commit_seed.metadata.take() {
                    state.configuration = configuration(value);
                }
                actions.push(protocol.clone());
                actions.push(metadata(&state.configuration));
            }
            apply_commit(&commit_seed, root_url, &mut state, &mut actions);
            commits.push(actions);
            states.push(state.clone());
        }
        History {
            commits,
            states,
            root_url: root_url.to_string(),
        }
    }

    /// The reconciled actions of commits `first..=end` (spec "Log Compaction Files"): the
    /// newest action per file key, `txn` per app, domain, and the newest `metaData` and
    /// `protocol`; no `commitInfo`.
    fn compacted(&self, first: usize, end: usize) -> Vec<Value> {
        let mut newest: BTreeMap<String, Value> = BTreeMap::new();
        let mut files: BTreeMap<Key, Value> = BTreeMap::new();
        for actions in &self.commits[first..=end] {
            for action in actions {
                let (name, body) = action.as_object().unwrap().iter().next().unwrap();
                match name.as_str() {
                    "commitInfo" => {}
                    "add" | "remove" => {
                        files.insert(file_key(body, &self.root_url), action.clone());
                    }
                    "txn" => {
                        newest.insert(format!("txn/{}", body["appId"]), action.clone());
                    }
                    "domainMetadata" => {
                        newest.insert(format!("domain/{}", body["domain"]), action.clone());
                    }
                    other => {
                        newest.insert(other.to_string(), action.clone());
                    }
                }
            }
        }
        newest.into_values().chain(files.into_values()).collect()
    }
}

/// Turns one commit seed into valid actions (catalogue C-14, C-15: at most one add and one
/// remove per path, an add and a remove of one path only with different deletion vectors, one
/// `txn` per app and one action per domain) and applies them to `state`.
fn apply_commit(seed: &CommitSeed, root_url: &str, state: &mut State, actions: &mut Vec<Value>) {
    let mut touched = BTreeSet::new();
    for &(path_index, operation, choice) in &seed.files {
        if !touched.insert(path_index) {
            continue;
        }
        let path = PATHS[path_index];
        let decoded = decode(path);
        let live = state.live_of(&decoded);
        // Removes are sometimes spelled as an absolute URI (catalogue C-21).
        let spelled = |choice: u8| match choice & 0x80 {
            0 => path.to_string(),
            _ => format!("{root_url}{path}"),
        };
        match (operation % 4, live.as_slice()) {
            (2, []) => {
                // Removing a file that is not live leaves a tombstone.
                let action = remove_action(&spelled(choice), None);
                state.remove((decoded, None), action.clone());
                actions.push(action);
            }
            (2, live) => {
                let key = live[usize::from(choice) % live.len()].clone();
                let dv = key.1.as_deref().map(|id| &id[1..]);
                let action = remove_action(&spelled(choice), dv);
                state.remove(key, action.clone());
                actions.push(action);
            }
            (3, [_, ..]) => {
                // Replace a deletion vector: remove the old key, add the path with another.
                let old = live[usize::from(choice) % live.len()].clone();
                let old_dv = old.1.as_deref().map(|id| &id[1..]);
                let new_dv = DVS
                    .iter()
                    .copied()
                    .cycle()
                    .skip(usize::from(choice) % 4)
                    .find(|dv| Some(*dv) != old_dv)
                    .unwrap();
                let remove = remove_action(&spelled(choice), old_dv);
                let add = add_action(path, Some(new_dv), choice);
                state.remove(old, remove.clone());
                state.add((decoded, Some(dv_id(new_dv))), add.clone());
                actions.push(remove);
                actions.push(add);
            }
            (operation, _) => {
                // An add (or a re-add, C-20); with a deletion vector some of the time.
                let with_dv = operation == 3 || choice % 3 != 0;
                let dv = with_dv.then(|| DVS[usize::from(choice) % 4]);
                let action = add_action(path, dv, choice);
                state.add((decoded, dv.map(dv_id)), action.clone());
                actions.push(action);
            }
        }
    }
    let mut apps = BTreeSet::new();
    for &(app, version) in &seed.txns {
        if apps.insert(app) {
            state.txns.insert(APPS[app].to_string(), version);
            actions.push(txn(APPS[app], version));
        }
    }
    let mut domains = BTreeSet::new();
    for &(domain, configuration) in &seed.domains {
        if domains.insert(domain) {
            let configuration = configuration.map(|c| format!("{{\"c\":{c}}}"));
            state
                .domains
                .insert(DOMAINS[domain].to_string(), configuration.clone());
            actions.push(domain_action(DOMAINS[domain], configuration.as_deref()));
        }
    }
    if let Some(value) = seed.metadata {
        state.configuration = configuration(value);
        actions.push(metadata(&state.configuration));
    }
}

fn configuration(value: u8) -> BTreeMap<String, String> {
    BTreeMap::from([("k".to_string(), value.to_string())])
}

/// The key of an `add` or `remove` body: the path relative to the root and decoded.
fn file_key(body: &Value, root_url: &str) -> Key {
    let path = body["path"].as_str().unwrap();
    let dv = body
        .get("deletionVector")
        .map(|dv| dv_id(dv["pathOrInlineDv"].as_str().unwrap()));
    (decode(path.strip_prefix(root_url).unwrap_or(path)), dv)
}

fn decode(path: &str) -> String {
    percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .unwrap()
        .into_owned()
}

fn dv_id(inline: &str) -> String {
    format!("i{inline}")
}

// ---------------------------------------------------------------------------------------------
// Actions
// ---------------------------------------------------------------------------------------------

const SCHEMA: &str =
    r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}"#;

fn protocol_dv() -> Value {
    json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors"],
        "writerFeatures": ["deletionVectors", "domainMetadata"]}})
}

fn protocol_v2() -> Value {
    json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["deletionVectors", "v2Checkpoint"],
        "writerFeatures": ["deletionVectors", "domainMetadata", "v2Checkpoint"]}})
}

fn metadata(configuration: &BTreeMap<String, String>) -> Value {
    json!({"metaData": {"id": "0b7c1f2e-0000-4000-8000-000000000002",
        "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA,
        "partitionColumns": [], "createdTime": 1, "configuration": configuration}})
}

fn add_action(path: &str, dv: Option<&str>, choice: u8) -> Value {
    let mut action = json!({"add": {"path": path, "partitionValues": {},
        "size": 100 + i64::from(choice), "modificationTime": 1, "dataChange": true}});
    if let Some(dv) = dv {
        action["add"]["deletionVector"] = inline_dv(dv);
    }
    action
}

fn remove_action(path: &str, dv: Option<&str>) -> Value {
    let mut action = json!({"remove": {"path": path, "deletionTimestamp": 2, "dataChange": true}});
    if let Some(dv) = dv {
        action["remove"]["deletionVector"] = inline_dv(dv);
    }
    action
}

fn inline_dv(text: &str) -> Value {
    json!({"storageType": "i", "pathOrInlineDv": text, "sizeInBytes": 10, "cardinality": 1})
}

fn txn(app: &str, version: i64) -> Value {
    json!({"txn": {"appId": app, "version": version}})
}

fn domain_action(domain: &str, configuration: Option<&str>) -> Value {
    json!({"domainMetadata": {"domain": domain, "configuration": configuration.unwrap_or(""),
        "removed": configuration.is_none()}})
}

// ---------------------------------------------------------------------------------------------
// Reading snapshots
// ---------------------------------------------------------------------------------------------

/// The live `(path, dv unique id)` keys from [`Snapshot::files`]; fails on duplicates.
fn live_keys(runtime: &tokio::runtime::Runtime, snapshot: &Snapshot) -> BTreeSet<Key> {
    let (schema, batches) = runtime.block_on(snapshot.files(false)).unwrap();
    let batch = arrow::compute::concat_batches(&schema, &batches).unwrap();
    let paths = strings(batch.column_by_name("path").unwrap().as_ref());
    let dv = batch.column_by_name("deletion_vector").unwrap();
    let ids = dv_ids(dv.as_any().downcast_ref::<StructArray>().unwrap());
    let keys: Vec<Key> = paths.into_iter().map(Option::unwrap).zip(ids).collect();
    let unique: BTreeSet<Key> = keys.iter().cloned().collect();
    assert_eq!(unique.len(), keys.len(), "duplicate live keys: {keys:?}");
    unique
}

/// The tombstone keys from [`Snapshot::remove_actions`], paths decoded and made relative.
fn tombstone_keys(snapshot: &Snapshot) -> BTreeSet<Key> {
    let root = snapshot.table_uri().to_string();
    let mut keys = BTreeSet::new();
    for removes in block_on(snapshot.remove_actions()).unwrap() {
        let paths = strings(removes.column_by_name("path").unwrap().as_ref());
        let dv = removes.column_by_name("deletionVector").unwrap();
        let ids = dv_ids(dv.as_any().downcast_ref::<StructArray>().unwrap());
        for (path, dv) in paths.into_iter().zip(ids) {
            let path = path.unwrap();
            let relative = path.strip_prefix(&root).unwrap_or(&path);
            assert!(
                keys.insert((decode(relative), dv)),
                "duplicate tombstone {path}"
            );
        }
    }
    keys
}

/// `storageType + pathOrInlineDv [@offset]` per row (children by position), `None` for rows
/// without a deletion vector.
fn dv_ids(dv: &StructArray) -> Vec<Option<String>> {
    let storage = strings(dv.column(0).as_ref());
    let data = strings(dv.column(1).as_ref());
    let offsets = dv.column(2).as_any().downcast_ref::<Int32Array>().unwrap();
    (0..dv.len())
        .map(|row| {
            dv.is_valid(row).then(|| {
                let base = format!(
                    "{}{}",
                    storage[row].clone().unwrap_or_default(),
                    data[row].clone().unwrap_or_default()
                );
                match offsets.is_valid(row) {
                    true => format!("{base}@{}", offsets.value(row)),
                    false => base,
                }
            })
        })
        .collect()
}

fn strings(array: &dyn Array) -> Vec<Option<String>> {
    let strings = array.as_any().downcast_ref::<StringArray>().unwrap();
    strings
        .iter()
        .map(|value| value.map(str::to_string))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Writing logs
// ---------------------------------------------------------------------------------------------

struct Log {
    root: std::path::PathBuf,
    dir: std::path::PathBuf,
}

impl Log {
    fn new(root: &std::path::Path) -> Log {
        let dir = root.join("_delta_log");
        std::fs::create_dir_all(dir.join("_sidecars")).unwrap();
        Log {
            root: root.to_path_buf(),
            dir,
        }
    }

    fn root_url(&self) -> String {
        url::Url::from_directory_path(&self.root)
            .unwrap()
            .to_string()
    }

    fn write(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.dir.join(name), bytes).unwrap();
    }

    /// A checkpoint of `state` at `version`. With `v2`: classic-named or UUID-named (Parquet
    /// with sidecars, or JSON with the file actions inline); otherwise classic or two-part.
    fn checkpoint(&self, version: u64, state: &State, v2: bool, kind: u8) {
        let (others, files) = state.checkpoint_actions();
        match (v2, kind % 3) {
            (false, 0) | (true, 0) => {
                let mut actions = others;
                if v2 {
                    actions.push(json!({"checkpointMetadata": {"version": version}}));
                }
                actions.extend(files);
                let schema = checkpoint_schema(v2);
                self.write(
                    &classic_checkpoint_file_name(version),
                    &parquet_file(schema, &actions),
                );
            }
            (false, _) => {
                let (first, second): (Vec<_>, Vec<_>) = files
                    .into_iter()
                    .enumerate()
                    .partition(|(index, _)| index % 2 == 0);
                let mut part_one = others;
                part_one.extend(first.into_iter().map(|(_, action)| action));
                let part_two: Vec<Value> = second.into_iter().map(|(_, action)| action).collect();
                for (part, actions) in [(1, part_one), (2, part_two)] {
                    let name = multi_part_checkpoint_file_name(version, part, 2);
                    self.write(&name, &parquet_file(checkpoint_schema(false), &actions));
                }
            }
            (true, 1) => {
                let mut actions = others;
                actions.push(json!({"checkpointMetadata": {"version": version}}));
                let (first, second) = files.split_at(files.len() / 2);
                for sidecar in [first, second] {
                    let name = format!("{}.parquet", uuid::Uuid::new_v4());
                    let bytes = parquet_file(sidecar_schema(), sidecar);
                    std::fs::write(self.dir.join("_sidecars").join(&name), &bytes).unwrap();
                    actions.push(json!({"sidecar": {"path": name, "sizeInBytes": bytes.len(),
                        "modificationTime": 1}}));
                }
                let uuid = uuid::Uuid::new_v4().to_string();
                let name = uuid_checkpoint_file_name(version, &uuid, CheckpointFormat::Parquet);
                self.write(&name, &parquet_file(checkpoint_schema(true), &actions));
            }
            (true, _) => {
                let mut actions = vec![json!({"checkpointMetadata": {"version": version}})];
                actions.extend(others);
                actions.extend(files);
                let uuid = uuid::Uuid::new_v4().to_string();
                let name = uuid_checkpoint_file_name(version, &uuid, CheckpointFormat::Json);
                self.write(&name, &json_lines(&actions));
            }
        }
    }
}

fn sidecar_schema() -> SchemaRef {
    Arc::new(Schema::new(file_action_fields()))
}
