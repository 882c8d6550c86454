//! Action reconciliation (spec "Action Reconciliation", catalogue C).
//!
//! File actions are keyed by `(path, deletion vector unique id)` (C-07), with paths brought to
//! one spelling first (C-21): URL escapes decoded, and absolute URIs under the table root made
//! relative, so `/t/a`, `file:/t/a`, `file:///t/a` and `a` name one file. Commits are replayed
//! newest first; for every key only the newest action counts (C-08). Commits fill the set of
//! seen keys; checkpoint rows are already reconciled, so they only probe it, and their batches
//! are probed in parallel on the rayon pool.
//!
//! Replay is CPU work: async code runs it through [`crate::util::cpu::run`] (see
//! [`crate::replay::load::fold_state_async`]), never on a runtime thread.

use std::borrow::Cow;

use arrow::compute::filter;
use arrow_array::{Array, BooleanArray, Int32Array, StringArray, StructArray};
use hashbrown::HashSet;
use rayon::prelude::*;
use url::Url;

use crate::actions::layout::{add, FileActionBatch};
use crate::actions::unique_dv_id;
use crate::error::{Error, Result};

/// The live files and tombstones of a snapshot, as filtered `add` / `remove` structs.
#[derive(Debug, Default, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct ReplayedFiles {
    pub adds: Vec<StructArray>,
    pub removes: Vec<StructArray>,
}

/// Reconciles `commits` (newest first, one or more batches per version) and then the already
/// reconciled `checkpoint` batches (see [`Replay`]).
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn replay_files(
    commits: Vec<FileActionBatch>,
    checkpoint: Vec<FileActionBatch>,
    keys: &FileKeys,
) -> Result<ReplayedFiles> {
    let mut replay = Replay::new(keys.clone());
    for batch in commits {
        replay.commit(batch)?;
    }
    replay.finish(checkpoint)
}

/// Reconciliation under way: commit batches go in one at a time, newest first
/// ([`Replay::commit`]), then the checkpoint's ([`Replay::finish`]). Each batch is dropped once
/// its rows are selected, and runs of small selections are joined as replay goes (see
/// [`Coalescer`]), so a caller that decodes commits as it goes never holds the decoded log and
/// its replayed form whole at once.
pub(crate) struct Replay {
    keys: FileKeys,
    /// The keys of every commit action replayed so far.
    seen: HashSet<String>,
    adds: Coalescer,
    removes: Coalescer,
}

impl Replay {
    pub(crate) fn new(keys: FileKeys) -> Self {
        Replay {
            keys,
            seen: HashSet::new(),
            adds: Coalescer::default(),
            removes: Coalescer::default(),
        }
    }

    /// Replays `batch`, the file actions of a commit older than every batch replayed so far
    /// (or the next batch of the same commit).
    pub(crate) fn commit(&mut self, batch: FileActionBatch) -> Result<()> {
        let (live, dead) = select_in_commit(&batch, &self.keys, &mut self.seen)?;
        push_selected(&mut self.adds, &mut self.removes, &batch, live, dead)
    }

    /// Replays the already reconciled `checkpoint` batches (probed in parallel) and returns
    /// the live files and tombstones.
    pub(crate) fn finish(mut self, checkpoint: Vec<FileActionBatch>) -> Result<ReplayedFiles> {
        let selections = checkpoint
            .par_iter()
            .map(|batch| select_in_checkpoint(batch, &self.keys, &self.seen))
            .collect::<Result<Vec<_>>>()?;
        for (batch, (live, dead)) in checkpoint.into_iter().zip(selections) {
            push_selected(&mut self.adds, &mut self.removes, &batch, live, dead)?;
        }
        Ok(ReplayedFiles {
            adds: self.adds.finish()?,
            removes: self.removes.finish()?,
        })
    }

    /// The live files and tombstones of the commits replayed, reconciled among themselves
    /// (no checkpoint), with the keys of every action they hold: what an incremental
    /// checkpoint adds to the previous checkpoint's rows, and which of those rows it drops.
    pub(crate) fn finish_commits(self) -> Result<(ReplayedFiles, TouchedKeys)> {
        let touched = TouchedKeys {
            keys: self.keys,
            seen: self.seen,
        };
        let files = ReplayedFiles {
            adds: self.adds.finish()?,
            removes: self.removes.finish()?,
        };
        Ok((files, touched))
    }
}

/// The keys of every file action of some commits (see [`Replay::finish_commits`]): a row of
/// an older checkpoint whose key is among them is superseded by those commits.
#[derive(Debug, Clone)]
pub(crate) struct TouchedKeys {
    keys: FileKeys,
    seen: HashSet<String>,
}

impl TouchedKeys {
    /// For every row of `actions` (an `add` or `remove` struct of a checkpoint named `file`,
    /// in any layout that has `path` and `deletionVector`'s key fields): true when the row is
    /// an action whose key no commit touched.
    pub(crate) fn untouched(&self, actions: &StructArray, file: &str) -> Result<BooleanArray> {
        untouched_rows(actions, &self.keys, &self.seen, file, |_| true)
    }
}

/// The row count runs of small replayed batches are joined up to, so that a file list leaves
/// in batches of this order whatever the shape of the log (one small batch per commit).
pub(crate) const COALESCED_ROWS: usize = 65_536;

/// Batches at least this large are kept as they are (checkpoint row groups, big commits).
const SMALL_BATCH_ROWS: usize = 8_192;

/// Joins the rows selected from arrays as they come: the selections of every run of
/// consecutive small arrays of one type (one commit each, in a log of small commits) become
/// one array as soon as the run is complete, taken from all of them at once (one copy of the
/// selected rows, not one per array and again to join them); a run spans at most
/// [`COALESCED_ROWS`] rows before selection, so no more than one run's small arrays are held
/// at a time. Large arrays are selected from alone. Row order is kept.
#[derive(Default)]
struct Coalescer {
    joined: Vec<StructArray>,
    /// The small arrays of the current run, each with the rows selected from it.
    run: Vec<(StructArray, BooleanArray)>,
    run_rows: usize,
}

impl Coalescer {
    /// Appends the rows of `array` that `selected` marks; `file` names it in errors.
    fn push(&mut self, array: &StructArray, selected: BooleanArray, file: &str) -> Result<()> {
        if selected.true_count() == 0 {
            return Ok(());
        }
        if array.len() >= SMALL_BATCH_ROWS {
            self.end_run()?;
            let selection = filter(array, &selected).map_err(|error| Error::arrow(file, error))?;
            self.joined.push(as_struct(selection, file)?);
            return Ok(());
        }
        let fits = self.run.first().is_none_or(|(first, _)| {
            first.data_type() == array.data_type() && self.run_rows + array.len() <= COALESCED_ROWS
        });
        if !fits {
            self.end_run()?;
        }
        self.run_rows += array.len();
        self.run.push((array.clone(), selected));
        Ok(())
    }

    fn end_run(&mut self) -> Result<()> {
        self.run_rows = 0;
        let run = std::mem::take(&mut self.run);
        self.joined.extend(select_run(&run)?);
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<StructArray>> {
        self.end_run()?;
        Ok(self.joined)
    }
}

/// The selected rows of the arrays of `run`, in order, as one array (none for an empty run).
fn select_run(run: &[(StructArray, BooleanArray)]) -> Result<Option<StructArray>> {
    const JOINING: &str = "joining replayed file actions";
    if run.is_empty() {
        return Ok(None);
    }
    let arrays: Vec<&dyn Array> = run.iter().map(|(array, _)| array as &dyn Array).collect();
    let rows: Vec<(usize, usize)> = run
        .iter()
        .enumerate()
        .flat_map(|(index, (_, selected))| {
            let rows = selected.iter().enumerate();
            rows.filter(|(_, keep)| *keep == Some(true))
                .map(move |(row, _)| (index, row))
        })
        .collect();
    let joined =
        arrow::compute::interleave(&arrays, &rows).map_err(|error| Error::arrow(JOINING, error))?;
    as_struct(joined, JOINING).map(Some)
}

/// `array` as the struct array it is; `context` names it in errors.
fn as_struct(array: arrow_array::ArrayRef, context: &str) -> Result<StructArray> {
    array
        .as_any()
        .downcast_ref::<StructArray>()
        .cloned()
        .ok_or_else(|| Error::internal(context, "selected file actions are not a struct"))
}

/// Brings log paths to one spelling for keying (catalogue C-21).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct FileKeys {
    /// `scheme://authority` of the table root, for absolute paths without a scheme.
    origin: String,
    /// The decoded table root URL ending in `/`, stripped from absolute paths inside it.
    root: String,
}

impl FileKeys {
    #[cfg_attr(feature = "internal-api", visibility::make(pub))]
    pub(crate) fn new(root: &Url) -> Self {
        let origin = root[..url::Position::BeforePath].to_string();
        let root = format!("{origin}{}", decode(root.path()));
        FileKeys { origin, root }
    }

    /// Fails when `path`, a relative path, leaves the table root through `..` segments
    /// (spec: relative paths are resolved against the table root). Absolute URIs may name
    /// files anywhere (shallow clones do).
    pub(crate) fn check_inside_root(&self, path: &str, file: &str) -> Result<()> {
        if !path.contains("..") && !path.contains('%') {
            return Ok(());
        }
        let decoded = decode(path);
        let relative = !decoded.starts_with('/') && !path.contains(':');
        if relative && decoded.split('/').any(|segment| segment == "..") {
            return Err(Error::InvalidPath {
                path: path.to_string(),
                reason: format!("it leaves the table root (named in {file})"),
            });
        }
        Ok(())
    }

    /// The canonical spelling of `path`: decoded, relative to the root when inside it.
    /// Plain relative paths (the common case) are returned without copying.
    pub(crate) fn canonical<'a>(&self, path: &'a str) -> Cow<'a, str> {
        let has_scheme = path.contains(':');
        if !has_scheme && !path.starts_with('/') && !path.contains('%') {
            return Cow::Borrowed(path);
        }
        let absolute = if path.starts_with('/') {
            format!("{}{}", self.origin, decode(path))
        } else if has_scheme {
            match Url::parse(path) {
                Ok(url) => format!(
                    "{}{}",
                    &url[..url::Position::BeforePath],
                    decode(url.path())
                ),
                Err(_) => decode(path).into_owned(),
            }
        } else {
            return Cow::Owned(decode(path).into_owned());
        };
        match absolute.strip_prefix(&self.root) {
            Some(relative) => Cow::Owned(relative.to_string()),
            None => Cow::Owned(absolute),
        }
    }
}

fn decode(text: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy()
}

/// The columns of an add or remove struct that make up its key.
struct KeyColumns<'a> {
    path: &'a StringArray,
    dv: Option<DvColumns<'a>>,
}

struct DvColumns<'a> {
    valid: &'a StructArray,
    storage_type: &'a StringArray,
    path_or_inline: &'a StringArray,
    offset: &'a Int32Array,
}

impl<'a> KeyColumns<'a> {
    fn new(actions: &'a StructArray, file: &str) -> Result<Self> {
        let path = string_child(actions, add::PATH, file)?;
        let dv = match actions.column_by_name(add::DELETION_VECTOR) {
            Some(column) if column.null_count() < column.len() => {
                let valid = column
                    .as_any()
                    .downcast_ref::<StructArray>()
                    .ok_or_else(|| Error::corrupt(file, "deletionVector is not a struct"))?;
                Some(DvColumns {
                    valid,
                    storage_type: string_child(valid, "storageType", file)?,
                    path_or_inline: string_child(valid, "pathOrInlineDv", file)?,
                    offset: valid
                        .column_by_name("offset")
                        .and_then(|c| c.as_any().downcast_ref::<Int32Array>())
                        .ok_or_else(|| {
                            Error::corrupt(file, "deletionVector.offset is not an int")
                        })?,
                })
            }
            _ => None,
        };
        Ok(KeyColumns { path, dv })
    }

    /// The key of row `row`, borrowed when the row has no deletion vector.
    fn key<'k>(&'k self, row: usize, keys: &FileKeys, file: &str) -> Result<Cow<'k, str>> {
        if self.path.is_null(row) {
            return Err(Error::corrupt(
                file,
                format!("a file action without a path (row {row})"),
            ));
        }
        let path = keys.canonical(self.path.value(row));
        match &self.dv {
            Some(dv) if dv.valid.is_valid(row) => {
                let offset = dv.offset.is_valid(row).then(|| dv.offset.value(row));
                let id = unique_dv_id(
                    dv.storage_type.value(row),
                    dv.path_or_inline.value(row),
                    offset,
                );
                Ok(Cow::Owned(format!("{path}\u{0}{id}")))
            }
            _ => Ok(path),
        }
    }
}

fn string_child<'a>(array: &'a StructArray, name: &str, file: &str) -> Result<&'a StringArray> {
    array
        .column_by_name(name)
        .and_then(|column| column.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| Error::corrupt(file, format!("'{name}' is missing or not a string")))
}

/// Selects the adds and removes of one commit whose keys no newer commit touched, and marks
/// all of its keys seen.
fn select_in_commit(
    batch: &FileActionBatch,
    keys: &FileKeys,
    seen: &mut HashSet<String>,
) -> Result<(BooleanArray, BooleanArray)> {
    let file = &*batch.file;
    let add_keys = KeyColumns::new(&batch.adds, file)?;
    let remove_keys = KeyColumns::new(&batch.removes, file)?;
    let rows = batch.num_rows();
    // Grown once per batch, not by doubling as its keys go in.
    seen.reserve(rows);
    let mut live = Vec::with_capacity(rows);
    let mut dead = Vec::with_capacity(rows);
    for row in 0..rows {
        let is_add = batch.adds.is_valid(row);
        let is_remove = batch.removes.is_valid(row);
        let mut newest = |columns: &KeyColumns<'_>| -> Result<bool> {
            let key = columns.key(row, keys, file)?;
            if seen.contains(key.as_ref()) {
                return Ok(false);
            }
            seen.insert(key.into_owned());
            Ok(true)
        };
        if is_add {
            keys.check_inside_root(add_keys.path.value(row), file)?;
        }
        let newest_add = is_add && newest(&add_keys)?;
        live.push(newest_add && batch.may_match(row));
        dead.push(is_remove && newest(&remove_keys)?);
    }
    Ok((BooleanArray::from(live), BooleanArray::from(dead)))
}

/// Selects the checkpoint rows whose keys no commit after the checkpoint touched.
fn select_in_checkpoint(
    batch: &FileActionBatch,
    keys: &FileKeys,
    seen: &HashSet<String>,
) -> Result<(BooleanArray, BooleanArray)> {
    let file = &*batch.file;
    let live = untouched_rows(&batch.adds, keys, seen, file, |row| batch.may_match(row))?;
    let dead = untouched_rows(&batch.removes, keys, seen, file, |_| true)?;
    Ok((live, dead))
}

/// For every row of `actions`: true when it is an action that `judge` keeps and whose key is
/// not in `seen`. A relative path leaving the table root is an error naming `file`.
fn untouched_rows(
    actions: &StructArray,
    keys: &FileKeys,
    seen: &HashSet<String>,
    file: &str,
    judge: impl Fn(usize) -> bool,
) -> Result<BooleanArray> {
    if actions.null_count() == actions.len() {
        return Ok(BooleanArray::from(vec![false; actions.len()]));
    }
    let columns = KeyColumns::new(actions, file)?;
    (0..actions.len())
        .map(|row| {
            if !actions.is_valid(row) || !judge(row) {
                return Ok(false);
            }
            if !columns.path.is_null(row) {
                keys.check_inside_root(columns.path.value(row), file)?;
            }
            Ok(seen.is_empty() || !seen.contains(columns.key(row, keys, file)?.as_ref()))
        })
        .collect::<Result<Vec<bool>>>()
        .map(BooleanArray::from)
}

fn push_selected(
    adds: &mut Coalescer,
    removes: &mut Coalescer,
    batch: &FileActionBatch,
    live: BooleanArray,
    dead: BooleanArray,
) -> Result<()> {
    adds.push(&batch.adds, live, &batch.file)?;
    removes.push(&batch.removes, dead, &batch.file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::ArrayRef;
    use arrow_schema::{DataType, Field, Fields};
    use std::sync::Arc;

    fn paths(names: &[String]) -> StructArray {
        let column: ArrayRef = Arc::new(StringArray::from_iter_values(names));
        let fields = Fields::from(vec![Field::new("path", DataType::Utf8, true)]);
        StructArray::new(fields, vec![column], None)
    }

    fn all_paths(arrays: &[StructArray]) -> Vec<String> {
        arrays
            .iter()
            .flat_map(|array| {
                let column = array
                    .column(0)
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .unwrap();
                column
                    .iter()
                    .flatten()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// `arrays` through a [`Coalescer`], every row selected.
    fn coalesce(arrays: Vec<StructArray>) -> Result<Vec<StructArray>> {
        let mut coalescer = Coalescer::default();
        for array in arrays {
            let all = BooleanArray::from(vec![true; array.len()]);
            coalescer.push(&array, all, "t")?;
        }
        coalescer.finish()
    }

    #[test]
    fn only_selected_rows_are_joined() {
        let names: Vec<String> = (0..30_000).map(|i| format!("f{i}")).collect();
        let mut coalescer = Coalescer::default();
        for (index, chunk) in names.chunks(11).enumerate() {
            let selected = (0..chunk.len()).map(|row| (row + index) % 3 != 0);
            let selected = BooleanArray::from(selected.collect::<Vec<_>>());
            coalescer.push(&paths(chunk), selected, "t").unwrap();
        }
        coalescer
            .push(
                &paths(&names[..9_000]),
                BooleanArray::from(vec![false; 9_000]),
                "t",
            )
            .unwrap();
        let joined = coalescer.finish().unwrap();
        let expected: Vec<String> = names
            .chunks(11)
            .enumerate()
            .flat_map(|(index, chunk)| {
                let kept = chunk.iter().enumerate();
                kept.filter(move |(row, _)| (row + index) % 3 != 0)
                    .map(|(_, name)| name.clone())
            })
            .collect();
        assert_eq!(all_paths(&joined), expected);
    }

    #[test]
    fn small_batches_are_joined_in_order() {
        let names: Vec<String> = (0..100_000).map(|i| format!("f{i}")).collect();
        let batches: Vec<StructArray> = names.chunks(10).map(paths).collect();
        let joined = coalesce(batches).unwrap();
        assert_eq!(joined.len(), 2);
        assert!(joined.iter().all(|array| array.len() <= COALESCED_ROWS));
        assert_eq!(all_paths(&joined), names);
    }

    #[test]
    fn large_batches_stay_as_they_are() {
        let names: Vec<String> = (0..25_000).map(|i| format!("f{i}")).collect();
        let batches = vec![
            paths(&names[..5]),
            paths(&names[5..20_005]),
            paths(&names[20_005..20_010]),
            paths(&names[20_010..]),
        ];
        let joined = coalesce(batches).unwrap();
        let lengths: Vec<usize> = joined.iter().map(Array::len).collect();
        assert_eq!(lengths, vec![5, 20_000, 4_995]);
        assert_eq!(all_paths(&joined), names);
    }

    #[test]
    fn path_spellings_share_one_key() {
        let keys = FileKeys::new(&Url::parse("file:///tmp/t%201/").unwrap());
        assert_eq!(keys.canonical("a.parquet"), "a.parquet");
        assert_eq!(keys.canonical("a%20b.parquet"), "a b.parquet");
        assert_eq!(keys.canonical("/tmp/t 1/a.parquet"), "a.parquet");
        assert_eq!(keys.canonical("file:/tmp/t%201/a.parquet"), "a.parquet");
        assert_eq!(keys.canonical("file:///tmp/t%201/a.parquet"), "a.parquet");
        assert_eq!(
            keys.canonical("file:///elsewhere/a.parquet"),
            "file:///elsewhere/a.parquet"
        );
        assert_eq!(
            keys.canonical("/elsewhere/a%25.parquet"),
            "file:///elsewhere/a%.parquet"
        );
    }
}
