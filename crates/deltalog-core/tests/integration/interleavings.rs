//! Scripted interleavings of two and three writers (reliability notes §6.1, in the style of
//! the phase locks of Delta on Spark's concurrency fuzzer).
//!
//! Every writer reaches the table through its own [`PhasedStore`] and runs as a task that
//! stops at the points of its commit: [`Point::Start`] (before it reads the table),
//! [`Point::BeforeWrite`] / [`Point::AfterWrite`] (around the put-if-absent of `N.json`),
//! [`Point::ListLatest`] (the listing of the newest version after a lost race) and
//! [`Point::PostCommit`] (the commit landed; checksum, checkpoint and cleanup not yet run).
//! A script moves the writers from point to point; each case then asserts every writer's
//! exact outcome (the version and retries of a commit, or the conflict kind and the version
//! of the winner it met) and that the log replays with nothing lost or duplicated: the
//! versions are contiguous, every committed writer's commit is in the log exactly once at the
//! version it reported, no failed writer's commit is, every file a committed writer added is
//! live unless a later commit removed it, and no failed writer's file is live.
//!
//! The table (`table_ops`): partitions `p=a` and `p=b`, one file each, at version 1.

use crate::support::phased_store;
use crate::support::table_ops;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use deltalog_core::{ConflictKind, Error, SnapshotAt, Storage, Table};
use phased_store::{Actor, PhasedStore, Point};
use serde_json::Value;
use table_ops::{create, local_storage, new_path, run, Op};

use Point::{AfterWrite, BeforeWrite, ListLatest, PostCommit};

/// What a writer does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Job {
    /// An operation kind aimed at a partition.
    Op(Op, &'static str),
    /// A transaction setting application `app` to `version` (spec "Set Transaction
    /// Identifiers"), after reading its version.
    AppVersion(&'static str, i64),
    /// A checkpoint of the latest version.
    Checkpoint,
    /// Metadata cleanup.
    Cleanup,
    /// Ten rows appended to a partition with `write_table` (the append transaction).
    Append(&'static str),
    /// The row `a = 5` of a partition deleted with the `delete` operation (a deletion vector).
    RowDelete(&'static str),
}

/// One step of a script.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Writer `i` goes on until it reaches the point, and stops there.
    Until(usize, Point),
    /// Writer `i` runs to its end.
    Finish(usize),
    /// Every file in the log now is three days old (past a retention of one day).
    AgeLog,
}

use Step::{AgeLog, Finish, Until};

/// The outcome a case expects of a writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Committed at this version after this many retries.
    Committed(u64, u32),
    /// Failed with this conflict, met at the winning commit of this version.
    Conflict(ConflictKind, u64),
    /// A job that commits nothing finished without error.
    Done,
    /// Failed: metadata cleanup deleted this version, which the writer had to write or
    /// check ([`Error::VersionNotFound`]).
    CleanedUp(u64),
}

use Expect::{CleanedUp, Committed, Conflict, Done};

/// What a writer returned.
#[derive(Debug)]
enum Outcome {
    Committed(u64, u32),
    Failed(Error),
    Done,
}

struct Case {
    name: &'static str,
    /// Table properties on top of `table_ops::BASE_PROPERTIES`.
    properties: &'static [(&'static str, &'static str)],
    /// The writers `T1`, `T2`, ...
    jobs: &'static [Job],
    /// The script; writers it leaves unfinished then finish in order.
    script: &'static [Step],
    expect: &'static [Expect],
}

const SERIALIZABLE: &[(&str, &str)] = &[("delta.isolationLevel", "Serializable")];
const CHECKPOINT_EVERY_2: &[(&str, &str)] = &[("delta.checkpointInterval", "2")];
const RETENTION_1_DAY: &[(&str, &str)] = &[("delta.logRetentionDuration", "interval 1 days")];

use table_ops::Op::*;
use ConflictKind::*;
use Job::{AppVersion, Append, Checkpoint, Cleanup, RowDelete};

/// T2 runs whole while T1 stands at the given point.
macro_rules! t2_at_t1 {
    ($point:expr) => {
        &[Until(0, $point), Finish(1), Finish(0)]
    };
}

/// T1 reads, T2 commits at T1's write, T1 retries.
const T2_AT_WRITE: &[Step] = t2_at_t1!(BeforeWrite(2));
/// As [`T2_AT_WRITE`], then T3 lands at T1's second write (between its retry's listing and
/// its put).
const T3_BETWEEN_LIST_AND_PUT: &[Step] = &[
    Until(0, BeforeWrite(2)),
    Finish(1),
    Until(0, BeforeWrite(3)),
    Finish(2),
    Finish(0),
];
/// As [`T2_AT_WRITE`], then T3 lands while T1 is about to list the newest version.
const T3_AT_LIST: &[Step] = &[
    Until(0, BeforeWrite(2)),
    Finish(1),
    Until(0, ListLatest(2)),
    Finish(2),
    Finish(0),
];
/// As [`T2_AT_WRITE`], then T3 lands right after T1 lost version 2.
const T3_AFTER_LOST_WRITE: &[Step] = &[
    Until(0, BeforeWrite(2)),
    Finish(1),
    Until(0, AfterWrite(2)),
    Finish(2),
    Finish(0),
];
/// T1, T2 and T3 all read version 1 and stop before writing 2; T2 lands, then T3, then T1.
const ALL_READ_THEN_T2_T3_T1: &[Step] = &[
    Until(0, BeforeWrite(2)),
    Until(1, BeforeWrite(2)),
    Until(2, BeforeWrite(2)),
    Finish(1),
    Finish(2),
    Finish(0),
];
/// T1 commits and stands after its commit landed (before its post-commit steps); T2 runs.
const T2_AT_POST_COMMIT: &[Step] = t2_at_t1!(PostCommit(2));

const CASES: &[Case] = &[
    // -- two writers, T2 lands at T1's write ---------------------------------------------
    Case {
        name: "blind appends to one partition both land",
        properties: &[],
        jobs: &[Job::Op(BlindAppend, "a"), Job::Op(BlindAppend, "a")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "read-append over a blind append, WriteSerializable",
        properties: &[],
        jobs: &[Job::Op(ReadAppend, "a"), Job::Op(BlindAppend, "a")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "read-append over a blind append, Serializable",
        properties: SERIALIZABLE,
        jobs: &[Job::Op(ReadAppend, "a"), Job::Op(BlindAppend, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentAppend, 2), Committed(2, 0)],
    },
    Case {
        name: "read-append over a blind append to the other partition, Serializable",
        properties: SERIALIZABLE,
        jobs: &[Job::Op(ReadAppend, "a"), Job::Op(BlindAppend, "b")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "update over a delete of the file it read",
        properties: &[],
        jobs: &[Job::Op(Update, "a"), Job::Op(Delete, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentDeleteRead, 2), Committed(2, 0)],
    },
    Case {
        name: "delete over a delete of the same file",
        properties: &[],
        jobs: &[Job::Op(Delete, "a"), Job::Op(Delete, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentDeleteRead, 2), Committed(2, 0)],
    },
    Case {
        name: "delete over a delete of the other partition",
        properties: &[],
        jobs: &[Job::Op(Delete, "a"), Job::Op(Delete, "b")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "compaction over a delete of the file it rewrites",
        properties: &[],
        jobs: &[Job::Op(Compaction, "a"), Job::Op(Delete, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentDeleteRead, 2), Committed(2, 0)],
    },
    Case {
        name: "compaction over a blind append to its partition, Serializable",
        properties: SERIALIZABLE,
        jobs: &[Job::Op(Compaction, "a"), Job::Op(BlindAppend, "a")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "DV delete over a DV delete of the same file",
        properties: &[],
        jobs: &[Job::Op(DvDelete, "a"), Job::Op(DvDelete, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentAppend, 2), Committed(2, 0)],
    },
    Case {
        name: "full overwrite over a blind append",
        properties: &[],
        jobs: &[Job::Op(FullOverwrite, "a"), Job::Op(BlindAppend, "b")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "full overwrite over a blind append, Serializable",
        properties: SERIALIZABLE,
        jobs: &[Job::Op(FullOverwrite, "a"), Job::Op(BlindAppend, "b")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentAppend, 2), Committed(2, 0)],
    },
    Case {
        name: "replaceWhere over a delete of the other partition",
        properties: &[],
        jobs: &[Job::Op(ReplaceWhere, "a"), Job::Op(Delete, "b")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    // -- merge ---------------------------------------------------------------------------
    Case {
        name: "merges of different partitions both land",
        properties: &[],
        jobs: &[Job::Op(Merge, "a"), Job::Op(Merge, "b")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "merges of one partition: the second meets the first's files",
        properties: &[],
        jobs: &[Job::Op(Merge, "a"), Job::Op(Merge, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentAppend, 2), Committed(2, 0)],
    },
    Case {
        name: "merge over a blind append to its partition",
        properties: &[],
        jobs: &[Job::Op(Merge, "a"), Job::Op(BlindAppend, "a")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "merge over a blind append to its partition, Serializable",
        properties: SERIALIZABLE,
        jobs: &[Job::Op(Merge, "a"), Job::Op(BlindAppend, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentAppend, 2), Committed(2, 0)],
    },
    Case {
        name: "merge over a delete of the file it matched",
        properties: &[],
        jobs: &[Job::Op(Merge, "a"), Job::Op(Delete, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentDeleteRead, 2), Committed(2, 0)],
    },
    Case {
        name: "update over a merge of its partition",
        properties: &[],
        jobs: &[Job::Op(Update, "a"), Job::Op(Merge, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentAppend, 2), Committed(2, 0)],
    },
    Case {
        name: "merge, then a merge of the other partition lands at its retry",
        properties: &[],
        jobs: &[
            Job::Op(Merge, "a"),
            Job::Op(BlindAppend, "b"),
            Job::Op(Merge, "b"),
        ],
        script: T3_BETWEEN_LIST_AND_PUT,
        expect: &[Committed(4, 2), Committed(2, 0), Committed(3, 0)],
    },
    Case {
        name: "merge, then a compaction of its partition lands at its retry",
        properties: &[],
        jobs: &[
            Job::Op(Merge, "a"),
            Job::Op(BlindAppend, "b"),
            Job::Op(Compaction, "a"),
        ],
        script: T3_BETWEEN_LIST_AND_PUT,
        expect: &[
            Conflict(ConcurrentDeleteRead, 3),
            Committed(2, 0),
            Committed(3, 0),
        ],
    },
    // -- metadata and protocol -----------------------------------------------------------
    Case {
        name: "metadata change over a blind append",
        properties: &[],
        jobs: &[Job::Op(MetadataChange, "a"), Job::Op(BlindAppend, "a")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "blind append over a metadata change",
        properties: &[],
        jobs: &[Job::Op(BlindAppend, "a"), Job::Op(MetadataChange, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(MetadataChanged, 2), Committed(2, 0)],
    },
    Case {
        name: "metadata change over a metadata change",
        properties: &[],
        jobs: &[Job::Op(MetadataChange, "a"), Job::Op(MetadataChange, "b")],
        script: T2_AT_WRITE,
        expect: &[Conflict(MetadataChanged, 2), Committed(2, 0)],
    },
    Case {
        name: "merge over a metadata change",
        properties: &[],
        jobs: &[Job::Op(Merge, "a"), Job::Op(MetadataChange, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(MetadataChanged, 2), Committed(2, 0)],
    },
    Case {
        name: "metadata change over a merge",
        properties: &[],
        jobs: &[Job::Op(MetadataChange, "a"), Job::Op(Merge, "a")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "metadata change, then a metadata change lands at its retry",
        properties: &[],
        jobs: &[
            Job::Op(MetadataChange, "a"),
            Job::Op(BlindAppend, "b"),
            Job::Op(MetadataChange, "b"),
        ],
        script: T3_BETWEEN_LIST_AND_PUT,
        expect: &[
            Conflict(MetadataChanged, 3),
            Committed(2, 0),
            Committed(3, 0),
        ],
    },
    Case {
        name: "blind append over a protocol upgrade",
        properties: &[],
        jobs: &[Job::Op(BlindAppend, "a"), Job::Op(ProtocolUpgrade, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ProtocolChanged, 2), Committed(2, 0)],
    },
    Case {
        name: "protocol upgrade over a blind append",
        properties: &[],
        jobs: &[Job::Op(ProtocolUpgrade, "a"), Job::Op(BlindAppend, "a")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    // -- application transactions -------------------------------------------------------
    Case {
        name: "the same application twice at version 1",
        properties: &[],
        jobs: &[AppVersion("app", 1), AppVersion("app", 1)],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentTransaction, 2), Committed(2, 0)],
    },
    Case {
        name: "the same application, the later version lands first",
        properties: &[],
        jobs: &[AppVersion("app", 1), AppVersion("app", 2)],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentTransaction, 2), Committed(2, 0)],
    },
    Case {
        name: "two applications both land",
        properties: &[],
        jobs: &[AppVersion("app-x", 1), AppVersion("app-y", 1)],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "the same application lands at the retry",
        properties: &[],
        jobs: &[
            AppVersion("app", 1),
            AppVersion("other", 1),
            AppVersion("app", 7),
        ],
        script: T3_BETWEEN_LIST_AND_PUT,
        expect: &[
            Conflict(ConcurrentTransaction, 3),
            Committed(2, 0),
            Committed(3, 0),
        ],
    },
    Case {
        name: "the same application lands while the retry lists",
        properties: &[],
        jobs: &[
            AppVersion("app", 1),
            AppVersion("other", 1),
            AppVersion("app", 1),
        ],
        script: T3_AT_LIST,
        expect: &[
            Conflict(ConcurrentTransaction, 3),
            Committed(2, 0),
            Committed(3, 0),
        ],
    },
    Case {
        name: "the same application, all three read version 1",
        properties: &[],
        jobs: &[
            AppVersion("app", 1),
            AppVersion("other", 1),
            AppVersion("app", 1),
        ],
        script: ALL_READ_THEN_T2_T3_T1,
        expect: &[
            Conflict(ConcurrentTransaction, 3),
            Committed(2, 0),
            Committed(3, 1),
        ],
    },
    // -- domain metadata ----------------------------------------------------------------
    Case {
        name: "the same domain twice",
        properties: &[],
        jobs: &[Job::Op(DomainMetadata, "a"), Job::Op(DomainMetadata, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentTransaction, 2), Committed(2, 0)],
    },
    Case {
        name: "two domains both land",
        properties: &[],
        jobs: &[Job::Op(DomainMetadata, "a"), Job::Op(DomainMetadata, "b")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "the same domain lands at the retry",
        properties: &[],
        jobs: &[
            Job::Op(DomainMetadata, "a"),
            Job::Op(DomainMetadata, "b"),
            Job::Op(DomainMetadata, "a"),
        ],
        script: T3_BETWEEN_LIST_AND_PUT,
        expect: &[
            Conflict(ConcurrentTransaction, 3),
            Committed(2, 0),
            Committed(3, 0),
        ],
    },
    Case {
        name: "a domain over a blind append and a merge",
        properties: &[],
        jobs: &[
            Job::Op(DomainMetadata, "a"),
            Job::Op(BlindAppend, "a"),
            Job::Op(Merge, "b"),
        ],
        script: T3_AFTER_LOST_WRITE,
        expect: &[Committed(4, 1), Committed(2, 0), Committed(3, 0)],
    },
    // -- three writers: where T3 lands -------------------------------------------------
    Case {
        name: "T3 lands between T1's retry listing and its put",
        properties: &[],
        jobs: &[
            Job::Op(BlindAppend, "a"),
            Job::Op(BlindAppend, "a"),
            Job::Op(BlindAppend, "b"),
        ],
        script: T3_BETWEEN_LIST_AND_PUT,
        expect: &[Committed(4, 2), Committed(2, 0), Committed(3, 0)],
    },
    Case {
        name: "T3 lands while T1 is about to list",
        properties: &[],
        jobs: &[
            Job::Op(BlindAppend, "a"),
            Job::Op(BlindAppend, "a"),
            Job::Op(BlindAppend, "b"),
        ],
        script: T3_AT_LIST,
        expect: &[Committed(4, 1), Committed(2, 0), Committed(3, 0)],
    },
    Case {
        name: "T3 lands right after T1 lost",
        properties: &[],
        jobs: &[
            Job::Op(BlindAppend, "a"),
            Job::Op(BlindAppend, "a"),
            Job::Op(BlindAppend, "b"),
        ],
        script: T3_AFTER_LOST_WRITE,
        expect: &[Committed(4, 1), Committed(2, 0), Committed(3, 0)],
    },
    Case {
        name: "update; a harmless append, then a delete of its file at the retry",
        properties: &[],
        jobs: &[
            Job::Op(Update, "a"),
            Job::Op(BlindAppend, "b"),
            Job::Op(Delete, "a"),
        ],
        script: T3_BETWEEN_LIST_AND_PUT,
        expect: &[
            Conflict(ConcurrentDeleteRead, 3),
            Committed(2, 0),
            Committed(3, 0),
        ],
    },
    Case {
        name: "update; a harmless append, then a delete of its file while it lists",
        properties: &[],
        jobs: &[
            Job::Op(Update, "a"),
            Job::Op(BlindAppend, "b"),
            Job::Op(Delete, "a"),
        ],
        script: T3_AT_LIST,
        expect: &[
            Conflict(ConcurrentDeleteRead, 3),
            Committed(2, 0),
            Committed(3, 0),
        ],
    },
    Case {
        name: "read-append; appends elsewhere land twice, Serializable",
        properties: SERIALIZABLE,
        jobs: &[
            Job::Op(ReadAppend, "a"),
            Job::Op(BlindAppend, "b"),
            Job::Op(BlindAppend, "b"),
        ],
        script: T3_BETWEEN_LIST_AND_PUT,
        expect: &[Committed(4, 2), Committed(2, 0), Committed(3, 0)],
    },
    Case {
        name: "read-append; the second winner appends to its partition, Serializable",
        properties: SERIALIZABLE,
        jobs: &[
            Job::Op(ReadAppend, "a"),
            Job::Op(BlindAppend, "b"),
            Job::Op(BlindAppend, "a"),
        ],
        script: T3_AT_LIST,
        expect: &[
            Conflict(ConcurrentAppend, 3),
            Committed(2, 0),
            Committed(3, 0),
        ],
    },
    Case {
        name: "all three read version 1: blind appends land in order",
        properties: &[],
        jobs: &[
            Job::Op(BlindAppend, "a"),
            Job::Op(BlindAppend, "a"),
            Job::Op(BlindAppend, "a"),
        ],
        script: ALL_READ_THEN_T2_T3_T1,
        expect: &[Committed(4, 1), Committed(2, 0), Committed(3, 1)],
    },
    Case {
        name: "all three read version 1: deletes of one file, one wins",
        properties: &[],
        jobs: &[
            Job::Op(Delete, "a"),
            Job::Op(Delete, "a"),
            Job::Op(Delete, "a"),
        ],
        script: ALL_READ_THEN_T2_T3_T1,
        expect: &[
            Conflict(ConcurrentDeleteRead, 2),
            Committed(2, 0),
            Conflict(ConcurrentDeleteRead, 2),
        ],
    },
    Case {
        name: "all three read version 1: compactions of both partitions and an append",
        properties: &[],
        jobs: &[
            Job::Op(Compaction, "a"),
            Job::Op(Compaction, "b"),
            Job::Op(BlindAppend, "a"),
        ],
        script: ALL_READ_THEN_T2_T3_T1,
        expect: &[Committed(4, 1), Committed(2, 0), Committed(3, 1)],
    },
    Case {
        name: "T2 lands at T1's write, T1 retries, then T3 (read at 1) loses to both",
        properties: &[],
        jobs: &[
            Job::Op(Update, "a"),
            Job::Op(BlindAppend, "b"),
            Job::Op(Update, "a"),
        ],
        script: &[
            Until(2, BeforeWrite(2)),
            Until(0, BeforeWrite(2)),
            Finish(1),
            Finish(0),
            Finish(2),
        ],
        expect: &[
            Committed(3, 1),
            Committed(2, 0),
            Conflict(ConcurrentAppend, 3),
        ],
    },
    // -- post-commit -------------------------------------------------------------------
    Case {
        name: "T2 commits while T1's post-commit steps wait",
        properties: &[],
        jobs: &[Job::Op(BlindAppend, "a"), Job::Op(BlindAppend, "b")],
        script: T2_AT_POST_COMMIT,
        expect: &[Committed(2, 0), Committed(3, 0)],
    },
    Case {
        name: "T2 read before T1 landed, commits while T1's post-commit steps wait",
        properties: &[],
        jobs: &[Job::Op(Update, "a"), Job::Op(Update, "b")],
        script: &[
            Until(1, BeforeWrite(2)),
            Until(0, PostCommit(2)),
            Finish(1),
            Finish(0),
        ],
        expect: &[Committed(2, 0), Committed(3, 1)],
    },
    Case {
        name: "a checkpoint lands between T1's read and its write",
        properties: &[],
        jobs: &[Job::Op(Update, "a"), Checkpoint],
        script: T2_AT_WRITE,
        expect: &[Committed(2, 0), Done],
    },
    Case {
        name: "a checkpoint lands at T1's post-commit",
        properties: &[],
        jobs: &[Job::Op(BlindAppend, "a"), Checkpoint],
        script: T2_AT_POST_COMMIT,
        expect: &[Committed(2, 0), Done],
    },
    Case {
        name: "a checkpoint and a cleanup land while T1 retries",
        properties: &[],
        jobs: &[
            Job::Op(Update, "a"),
            Job::Op(BlindAppend, "b"),
            Checkpoint,
            Cleanup,
        ],
        script: &[
            Until(0, BeforeWrite(2)),
            Finish(1),
            Until(0, ListLatest(2)),
            Finish(2),
            Finish(3),
            Finish(0),
        ],
        expect: &[Committed(3, 1), Committed(2, 0), Done, Done],
    },
    Case {
        name: "checkpoints at 2 and 4: T1's post-commit checkpoint of 2 comes last",
        properties: CHECKPOINT_EVERY_2,
        jobs: &[
            Job::Op(BlindAppend, "a"),
            Job::Op(BlindAppend, "b"),
            Job::Op(Delete, "b"),
        ],
        script: &[Until(0, PostCommit(2)), Finish(1), Finish(2), Finish(0)],
        expect: &[Committed(2, 0), Committed(3, 0), Committed(4, 0)],
    },
    Case {
        name: "a checkpoint of 3 lands while T1 retries against 2 and 3",
        properties: &[],
        jobs: &[
            Job::Op(Merge, "a"),
            Job::Op(BlindAppend, "b"),
            Job::Op(BlindAppend, "b"),
            Checkpoint,
        ],
        script: &[
            Until(0, BeforeWrite(2)),
            Finish(1),
            Finish(2),
            Finish(3),
            Finish(0),
        ],
        expect: &[Committed(4, 1), Committed(2, 0), Committed(3, 0), Done],
    },
    // -- the operations themselves: write_table appends, row deletes, merges ---------------
    Case {
        name: "write_table appends both land",
        properties: &[],
        jobs: &[Append("a"), Append("a")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "write_table appends: all three read version 1",
        properties: &[],
        jobs: &[Append("a"), Append("b"), Append("a")],
        script: ALL_READ_THEN_T2_T3_T1,
        expect: &[Committed(4, 1), Committed(2, 0), Committed(3, 1)],
    },
    Case {
        name: "write_table append over a metadata change",
        properties: &[],
        jobs: &[Append("a"), Job::Op(MetadataChange, "a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(MetadataChanged, 2), Committed(2, 0)],
    },
    Case {
        name: "row delete over an append to its partition",
        properties: &[],
        jobs: &[RowDelete("a"), Append("a")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "row delete over an append to its partition, Serializable",
        properties: SERIALIZABLE,
        jobs: &[RowDelete("a"), Append("a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentAppend, 2), Committed(2, 0)],
    },
    Case {
        name: "row deletes of one file: the second meets the first's deletion vector",
        properties: &[],
        jobs: &[RowDelete("a"), RowDelete("a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentAppend, 2), Committed(2, 0)],
    },
    Case {
        name: "row deletes of two partitions both land",
        properties: &[],
        jobs: &[RowDelete("a"), RowDelete("b")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    },
    Case {
        name: "row delete over a merge of the other partition, then an append at its retry",
        properties: &[],
        jobs: &[RowDelete("a"), Job::Op(Merge, "b"), Append("a")],
        script: T3_BETWEEN_LIST_AND_PUT,
        expect: &[Committed(4, 2), Committed(2, 0), Committed(3, 0)],
    },
    Case {
        name: "merge over a row delete of its partition",
        properties: &[],
        jobs: &[Job::Op(Merge, "a"), RowDelete("a")],
        script: T2_AT_WRITE,
        expect: &[Conflict(ConcurrentAppend, 2), Committed(2, 0)],
    },
    Case {
        name: "an append while a merge's post-commit steps wait",
        properties: CHECKPOINT_EVERY_2,
        jobs: &[Job::Op(Merge, "a"), Append("a"), RowDelete("b")],
        script: &[Until(0, PostCommit(2)), Finish(1), Finish(2), Finish(0)],
        expect: &[Committed(2, 0), Committed(3, 0), Committed(4, 0)],
    },
    // -- metadata cleanup deleting the log under a writer (retention one day) ------------
    Case {
        name: "cleanup keeps the winner T1 must check: T1 rebases",
        properties: RETENTION_1_DAY,
        jobs: &[
            Job::Op(Update, "a"),
            Job::Op(BlindAppend, "b"),
            Checkpoint,
            Cleanup,
        ],
        script: &[
            Until(0, BeforeWrite(2)),
            Finish(1),
            Finish(2),
            AgeLog,
            Finish(3),
            Finish(0),
        ],
        expect: &[Committed(3, 1), Committed(2, 0), Done, Done],
    },
    Case {
        name: "cleanup deleted the version T1 writes: T1 commits nothing",
        properties: RETENTION_1_DAY,
        jobs: &[
            Job::Op(BlindAppend, "a"),
            Job::Op(BlindAppend, "b"),
            Job::Op(BlindAppend, "b"),
            Checkpoint,
            Cleanup,
        ],
        script: &[
            AgeLog,
            Until(0, BeforeWrite(2)),
            Finish(1),
            Finish(2),
            Finish(3),
            AgeLog,
            Finish(4),
            Finish(0),
        ],
        expect: &[CleanedUp(2), Committed(2, 0), Committed(3, 0), Done, Done],
    },
    Case {
        name: "cleanup deletes the winners while T1 is about to list them",
        properties: RETENTION_1_DAY,
        jobs: &[
            Job::Op(BlindAppend, "a"),
            Job::Op(BlindAppend, "b"),
            Job::Op(BlindAppend, "b"),
            Checkpoint,
            Cleanup,
        ],
        script: &[
            Until(0, BeforeWrite(2)),
            Finish(1),
            Finish(2),
            Until(0, ListLatest(2)),
            Finish(3),
            AgeLog,
            Finish(4),
            Finish(0),
        ],
        expect: &[CleanedUp(2), Committed(2, 0), Committed(3, 0), Done, Done],
    },
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_interleavings_end_as_expected_and_lose_nothing() {
    assert!(CASES.len() >= 50, "{} cases", CASES.len());
    let mut wrong = Vec::new();
    for case in CASES {
        let played = play(case).await;
        let outcomes: Vec<Expect> = played.outcomes.iter().map(as_expect).collect();
        if outcomes != case.expect {
            wrong.push(format!(
                "{}: expected {:?}, got {:?}",
                case.name, case.expect, played.outcomes
            ));
            continue;
        }
        check_log(case, &played).await;
    }
    assert!(
        wrong.is_empty(),
        "{} cases:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

// -- the content of rebased commits ---------------------------------------------------------

/// The JSON lines of the commit at `version` in `dir`'s log.
fn commit_lines(dir: &FsPath, version: u64) -> Vec<Value> {
    commit_files(dir).remove(&version).unwrap().lines
}

/// The first action of kind `kind` in `lines`.
fn action<'a>(lines: &'a [Value], kind: &str) -> &'a Value {
    lines.iter().find_map(|l| l.get(kind)).unwrap()
}

const ROW_TRACKING: &[(&str, &str)] = &[("delta.enableRowTracking", "true")];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebased_append_takes_fresh_row_ids_after_each_winner() {
    // Version 1 holds rows 0..=19. T2 lands rows 20..=29 at T1's write; under the second
    // script T3 then lands 30..=39 between T1's retry listing and its put.
    for (script, version, base) in [(T2_AT_WRITE, 3, 30), (T3_BETWEEN_LIST_AND_PUT, 4, 40)] {
        let case = Case {
            name: "row ids",
            properties: ROW_TRACKING,
            jobs: &[
                Job::Op(BlindAppend, "a"),
                Job::Op(BlindAppend, "b"),
                Job::Op(BlindAppend, "b"),
            ],
            script,
            expect: &[],
        };
        let played = play(&case).await;
        let retries = version as u32 - 2;
        assert!(
            matches!(played.outcomes[0], Outcome::Committed(v, r) if v == version && r == retries)
        );
        check_log(&case, &played).await;
        let lines = commit_lines(played.dir.path(), version);
        let add = action(&lines, "add");
        assert_eq!(add["baseRowId"], base);
        assert_eq!(add["defaultRowCommitVersion"], version);
        let domain = action(&lines, "domainMetadata");
        assert_eq!(domain["domain"], "delta.rowTracking");
        let mark: Value = serde_json::from_str(domain["configuration"].as_str().unwrap()).unwrap();
        assert_eq!(mark["rowIdHighWaterMark"], base + 9);
        let info = action(&lines, "commitInfo");
        assert_eq!(
            info["readVersion"], 1,
            "a rebased commit keeps the version it read"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebased_commit_s_timestamp_follows_a_winner_from_the_future() {
    // T2's commit carries an in-commit timestamp an hour ahead (a writer whose clock runs
    // fast); T1, rebased over it, must still commit a later timestamp: T2's plus one.
    let dir = tempfile::tempdir().unwrap();
    let properties = [("delta.enableInCommitTimestamps", "true")];
    create(dir.path(), local_storage(dir.path()), &properties).await;
    let (store, reports) = phased_store(dir.path());
    let work = work(
        store,
        dir.path().to_path_buf(),
        Job::Op(BlindAppend, "a"),
        "T1".into(),
    );
    let mut t1 = Actor::spawn("T1", reports, work);
    t1.until(BeforeWrite(2)).await;
    let ahead = chrono::Utc::now().timestamp_millis() + 3_600_000;
    let table = Table::from_storage(local_storage(dir.path()));
    let mut tx = table.transaction("T2").await.unwrap();
    table_ops::stage(&mut tx, BlindAppend, "b", "T2").await;
    let bytes = tx.with_commit_info("actor", "T2").commit().await.unwrap();
    assert_eq!(bytes.version, 2);
    rewrite_timestamp(dir.path(), 2, ahead);
    let (outcome, met) = t1.finish().await;
    assert!(matches!(outcome, Outcome::Committed(3, 1)), "{outcome:?}");
    let expected = [
        Point::Start,
        BeforeWrite(2),
        AfterWrite(2),
        ListLatest(2),
        BeforeWrite(3),
        PostCommit(3),
    ];
    assert_eq!(met, expected);
    let info = action(&commit_lines(dir.path(), 3), "commitInfo").clone();
    assert_eq!(info["inCommitTimestamp"], ahead + 1);
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(snapshot.timestamp_ms(), ahead + 1);
}

/// Sets the in-commit timestamp of the commit at `version` in `dir` to `timestamp`.
fn rewrite_timestamp(dir: &FsPath, version: u64, timestamp: i64) {
    let path = dir.join(format!("_delta_log/{version:020}.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[0]["commitInfo"]["inCommitTimestamp"] = timestamp.into();
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebased_merge_commits_what_it_staged() {
    let case = Case {
        name: "merge over a blind append to the other partition",
        properties: &[],
        jobs: &[Job::Op(Merge, "a"), Job::Op(BlindAppend, "b")],
        script: T2_AT_WRITE,
        expect: &[Committed(3, 1), Committed(2, 0)],
    };
    let played = play(&case).await;
    assert_eq!(
        played.outcomes.iter().map(as_expect).collect::<Vec<_>>(),
        case.expect
    );
    check_log(&case, &played).await;
    let lines = commit_lines(played.dir.path(), 3);
    let info = action(&lines, "commitInfo");
    assert_eq!(info["operation"], "MERGE");
    assert_eq!(info["readVersion"], 1);
    assert_eq!(info["isBlindAppend"], false);
    let removes: Vec<&Value> = lines.iter().filter_map(|l| l.get("remove")).collect();
    assert_eq!(removes.len(), 1);
    assert_eq!(removes[0]["path"], "p=a/a1.parquet");
    let adds: Vec<&Value> = lines.iter().filter_map(|l| l.get("add")).collect();
    let with_dv: Vec<&&Value> = adds
        .iter()
        .filter(|a| !a["deletionVector"].is_null())
        .collect();
    assert_eq!(with_dv.len(), 1, "a1 again, its matched row deleted");
    assert_eq!(with_dv[0]["path"], "p=a/a1.parquet");
    assert_eq!(with_dv[0]["deletionVector"]["cardinality"], 1);
    let snapshot = Table::from_storage(local_storage(played.dir.path()))
        .snapshot(SnapshotAt::Latest)
        .await
        .unwrap();
    let scan = deltalog_core::Scan::new(&snapshot, deltalog_core::ScanOptions::default())
        .await
        .unwrap();
    let rows: usize = scan
        .to_batches()
        .await
        .unwrap()
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert_eq!(
        rows,
        20 + 10 + 1,
        "v1, T2's file, and the merge's one inserted row"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_creators_the_loser_gets_protocol_changed() {
    let dir = tempfile::tempdir().unwrap();
    let mut actors = Vec::new();
    for name in ["T1", "T2"] {
        let (store, reports) = phased_store(dir.path());
        let table = Table::from_storage(storage_of(&store, dir.path()));
        let work = async move {
            store.start().await;
            let spec = deltalog_core::transaction::TableSpec {
                schema: table_ops::schema(),
                ..deltalog_core::transaction::TableSpec::default()
            };
            let tx = table.create_transaction(spec).await?;
            tx.commit().await.map(|r| r.version)
        };
        actors.push(Actor::spawn(name, reports, work));
    }
    let mut t2 = actors.pop().unwrap();
    let mut t1 = actors.pop().unwrap();
    t1.until(BeforeWrite(0)).await;
    t2.until(BeforeWrite(0)).await;
    assert_eq!(t2.finish().await.0.unwrap(), 0);
    match t1.finish().await.0 {
        Err(Error::CommitConflict { kind, version, .. }) => {
            assert_eq!((kind, version), (ProtocolChanged, 0));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(commit_files(dir.path()).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_whose_next_version_was_cleaned_up_does_not_commit_behind_the_table() {
    // Three days ago the table was at version 1, and T1 read it. Since then T2 and T3
    // committed 2 and 3, a checkpoint of 3 was written, and with a retention of one day a
    // cleanup deleted 0.json to 2.json. T1's put of 2.json then finds no file there: it
    // must not be acknowledged at version 2, where no reader of the latest version looks.
    const DAYS_3: Duration = Duration::from_secs(3 * 24 * 3600);
    let dir = tempfile::tempdir().unwrap();
    let properties = [("delta.logRetentionDuration", "interval 1 days")];
    create(dir.path(), local_storage(dir.path()), &properties).await;
    age_the_log(dir.path(), DAYS_3);
    let (store, reports) = phased_store(dir.path());
    let work = work(
        store,
        dir.path().to_path_buf(),
        Job::Op(BlindAppend, "a"),
        "T1".into(),
    );
    let mut t1 = Actor::spawn("T1", reports, work);
    t1.until(BeforeWrite(2)).await;
    let table = Table::from_storage(local_storage(dir.path()));
    assert_eq!(run(&table, BlindAppend, "b", "T2").await.unwrap(), (2, 0));
    assert_eq!(run(&table, BlindAppend, "b", "T3").await.unwrap(), (3, 0));
    table.checkpoint(None).await.unwrap();
    age_the_log(dir.path(), DAYS_3);
    let cleanup = table.cleanup_metadata().await.unwrap();
    assert_eq!(cleanup.oldest_kept_version, Some(3));
    match t1.finish().await.0 {
        Outcome::Failed(Error::VersionNotFound {
            version, reason, ..
        }) => {
            assert_eq!(version, 2);
            assert!(reason.contains("nothing was committed"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!dir
        .path()
        .join("_delta_log/00000000000000000002.json")
        .exists());
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    assert_eq!(snapshot.version(), 3);
    assert!(!live_paths(dir.path()).await.contains("p=a/T1.parquet"));
    // Run again, it commits after the checkpoint.
    assert_eq!(run(&table, BlindAppend, "a", "T1").await.unwrap(), (4, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_of_an_old_table_whose_log_was_kept_commits() {
    // The same old read, but nothing was cleaned up: the check finds version 1 and T1
    // rebases over T2 as usual.
    const DAYS_3: Duration = Duration::from_secs(3 * 24 * 3600);
    let dir = tempfile::tempdir().unwrap();
    let properties = [("delta.logRetentionDuration", "interval 1 days")];
    create(dir.path(), local_storage(dir.path()), &properties).await;
    age_the_log(dir.path(), DAYS_3);
    let (store, reports) = phased_store(dir.path());
    let first = work(
        store,
        dir.path().to_path_buf(),
        Job::Op(BlindAppend, "a"),
        "T1".into(),
    );
    let mut t1 = Actor::spawn("T1", reports, first);
    t1.until(BeforeWrite(2)).await;
    let table = Table::from_storage(local_storage(dir.path()));
    assert_eq!(run(&table, BlindAppend, "b", "T2").await.unwrap(), (2, 0));
    assert!(matches!(t1.finish().await.0, Outcome::Committed(3, 1)));
    let (store, reports) = phased_store(dir.path());
    let third = work(
        store,
        dir.path().to_path_buf(),
        Job::Op(BlindAppend, "b"),
        "T3".into(),
    );
    age_the_log(dir.path(), DAYS_3);
    let t3 = Actor::spawn("T3", reports, third).finish().await.0;
    assert!(matches!(t3, Outcome::Committed(4, 0)), "{t3:?}");
}

// -- playing a case ---------------------------------------------------------------------------

/// A case played: the table's folder and every writer's outcome.
struct Played {
    dir: tempfile::TempDir,
    outcomes: Vec<Outcome>,
}

async fn play(case: &Case) -> Played {
    let dir = tempfile::tempdir().unwrap();
    create(dir.path(), local_storage(dir.path()), case.properties).await;
    let mut actors: Vec<Option<Actor<Outcome>>> = Vec::new();
    for (index, job) in case.jobs.iter().enumerate() {
        let (store, reports) = phased_store(dir.path());
        let name = format!("T{}", index + 1);
        let work = work(store, dir.path().to_path_buf(), *job, name.clone());
        actors.push(Some(Actor::spawn(&name, reports, work)));
    }
    let mut outcomes: Vec<Option<Outcome>> = case.jobs.iter().map(|_| None).collect();
    for step in case.script {
        match *step {
            Until(index, point) => actors[index].as_mut().unwrap().until(point).await,
            Finish(index) => {
                let actor = actors[index].take().unwrap();
                outcomes[index] = Some(actor.finish().await.0);
            }
            AgeLog => age_the_log(dir.path(), Duration::from_secs(3 * 24 * 3600)),
        }
    }
    for (index, actor) in actors.into_iter().enumerate() {
        if let Some(actor) = actor {
            outcomes[index] = Some(actor.finish().await.0);
        }
    }
    Played {
        dir,
        outcomes: outcomes.into_iter().map(Option::unwrap).collect(),
    }
}

/// A store of its own over the local table in `dir`, with its reports.
fn phased_store(
    dir: &FsPath,
) -> (
    PhasedStore,
    tokio::sync::mpsc::UnboundedReceiver<(Point, tokio::sync::oneshot::Sender<()>)>,
) {
    let url = url::Url::from_directory_path(dir).unwrap();
    let (inner, _) = object_store::parse_url(&url).unwrap();
    PhasedStore::new(Arc::from(inner))
}

fn storage_of(store: &PhasedStore, dir: &FsPath) -> Storage {
    let url = url::Url::from_directory_path(dir).unwrap();
    let (_, root) = object_store::parse_url(&url).unwrap();
    Storage::with_store(Arc::new(store.clone()), url, root)
}

/// The work of writer `name`: it stops at [`Point::Start`], then does `job`.
async fn work(store: PhasedStore, dir: PathBuf, job: Job, name: String) -> Outcome {
    let table = Table::from_storage(storage_of(&store, &dir));
    store.start().await;
    let result = match job {
        Job::Op(op, part) => run(&table, op, part, &name).await,
        Job::AppVersion(app, version) => set_app_version(&table, app, version, &name).await,
        Job::Append(part) => table_ops::run_write_append(&table, part, &name).await,
        Job::RowDelete(part) => table_ops::run_row_delete(&table, part, &name).await,
        Job::Checkpoint => {
            return match table.checkpoint(None).await {
                Ok(_) => Outcome::Done,
                Err(error) => Outcome::Failed(error),
            }
        }
        Job::Cleanup => {
            return match table.cleanup_metadata().await {
                Ok(_) => Outcome::Done,
                Err(error) => Outcome::Failed(error),
            }
        }
    };
    match result {
        Ok((version, retries)) => Outcome::Committed(version, retries),
        Err(error) => Outcome::Failed(error),
    }
}

async fn set_app_version(
    table: &Table,
    app: &str,
    version: i64,
    actor: &str,
) -> Result<(u64, u32), Error> {
    let mut tx = table.transaction(actor).await?;
    tx.set_app_version(app, version)?;
    let result = tx.with_commit_info("actor", actor).commit().await?;
    Ok((result.version, result.retries))
}

fn as_expect(outcome: &Outcome) -> Expect {
    match outcome {
        Outcome::Committed(version, retries) => Committed(*version, *retries),
        Outcome::Failed(Error::CommitConflict { kind, version, .. }) => Conflict(*kind, *version),
        Outcome::Failed(Error::VersionNotFound { version, .. }) => CleanedUp(*version),
        Outcome::Failed(other) => panic!("not a conflict: {other}"),
        Outcome::Done => Done,
    }
}

// -- checking the log ---------------------------------------------------------------------------

/// One commit file, as JSON lines.
struct CommitFile {
    actor: Option<String>,
    adds: Vec<String>,
    removes: Vec<String>,
    lines: Vec<Value>,
}

/// The commit files in `dir`'s log by version, read without the library.
fn commit_files(dir: &FsPath) -> BTreeMap<u64, CommitFile> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir.join("_delta_log")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let Some(version) = name.strip_suffix(".json").and_then(|v| v.parse().ok()) else {
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let pick = |kind: &str| -> Vec<String> {
            lines
                .iter()
                .filter_map(|l| l.get(kind)?.get("path")?.as_str().map(str::to_string))
                .collect()
        };
        let actor = lines.iter().find_map(|l| {
            l.get("commitInfo")?
                .get("actor")?
                .as_str()
                .map(str::to_string)
        });
        files.insert(
            version,
            CommitFile {
                actor,
                adds: pick("add"),
                removes: pick("remove"),
                lines,
            },
        );
    }
    files
}

/// The invariants every case ends with (see the module documentation).
async fn check_log(case: &Case, played: &Played) {
    let name = case.name;
    let files = commit_files(played.dir.path());
    let versions: Vec<u64> = files.keys().copied().collect();
    let (first, last) = (versions[0], *versions.last().unwrap());
    assert_eq!(
        versions,
        (first..=last).collect::<Vec<_>>(),
        "{name}: versions not contiguous"
    );
    let mut committed: HashMap<String, u64> = HashMap::new();
    for (index, outcome) in played.outcomes.iter().enumerate() {
        if let Outcome::Committed(version, _) = outcome {
            committed.insert(format!("T{}", index + 1), *version);
        }
    }
    let newest = committed.values().copied().max().unwrap_or(1);
    assert_eq!(last, newest, "{name}: the newest version");
    let mut seen: HashSet<String> = HashSet::new();
    for (version, file) in files.range(2..) {
        let actor = file.actor.clone().unwrap_or_default();
        assert_eq!(
            committed.get(&actor),
            Some(version),
            "{name}: {actor} at {version}"
        );
        assert!(
            seen.insert(actor.clone()),
            "{name}: {actor} committed twice"
        );
    }
    let kept = committed.values().filter(|v| **v >= first.max(2)).count();
    assert_eq!(seen.len(), kept, "{name}: a commit is missing");
    let mut replayed: HashSet<String> = HashSet::new();
    let mut gone: HashSet<String> = HashSet::new();
    for file in files.values() {
        for removed in &file.removes {
            replayed.remove(removed);
            gone.insert(removed.clone());
        }
        for added in &file.adds {
            gone.remove(added);
            replayed.insert(added.clone());
        }
    }
    let live = live_paths(played.dir.path()).await;
    if first == 0 {
        assert_eq!(
            live, replayed,
            "{name}: the snapshot is not the replay of the log"
        );
    } else {
        // The log's head was cleaned up: what its commits added is in the checkpoint.
        assert!(
            live.is_superset(&replayed),
            "{name}: {replayed:?} not all in {live:?}"
        );
        assert!(
            live.is_disjoint(&gone),
            "{name}: removed files {gone:?} are live"
        );
    }
    check_post_commit_files(name, played.dir.path(), &versions).await;
    let fake_deletion_vectors =
        case.jobs.contains(&Job::Op(DvDelete, "a")) || case.jobs.contains(&Job::Op(DvDelete, "b"));
    if !fake_deletion_vectors {
        check_rows(name, played.dir.path()).await;
    }
    for (index, job) in case.jobs.iter().enumerate() {
        let actor = format!("T{}", index + 1);
        let Job::Op(op, part) = job else { continue };
        let Some(path) = new_path(*op, part, &actor) else {
            continue;
        };
        match committed.get(&actor) {
            Some(version) => match files.get(version) {
                Some(file) => assert!(file.adds.contains(&path), "{name}: {path}"),
                None => assert!(*version < first, "{name}: {actor}'s commit is gone"),
            },
            None => assert!(!live.contains(&path), "{name}: {path} of a failed writer"),
        }
    }
}

/// Every `N.crc` agrees with version `N` replayed from its commits, and `_last_checkpoint`
/// (when there is one) names the newest checkpoint, however the post-commit steps of the
/// writers interleaved.
async fn check_post_commit_files(name: &str, dir: &FsPath, versions: &[u64]) {
    let table = Table::from_storage(local_storage(dir));
    for version in versions {
        let snapshot = table.snapshot(SnapshotAt::Version(*version)).await.unwrap();
        let checked = snapshot.validate_checksum().await;
        assert!(checked.is_ok(), "{name}: {version}.crc: {checked:?}");
    }
    let log = dir.join("_delta_log");
    let newest_checkpoint = std::fs::read_dir(&log)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let (version, _) = name.split_once(".checkpoint.")?;
            version.parse::<u64>().ok()
        })
        .max();
    let hint = std::fs::read_to_string(log.join("_last_checkpoint")).ok();
    let hinted = hint.map(|text| serde_json::from_str::<Value>(&text).unwrap()["version"].as_u64());
    assert_eq!(
        hinted,
        newest_checkpoint.map(Some),
        "{name}: _last_checkpoint"
    );
}

/// The rows a scan of the latest snapshot returns are the rows its files record (their
/// `numRecords` less their deletion vectors' cardinality): every data file and deletion
/// vector a committed writer left is there and whole.
async fn check_rows(name: &str, dir: &FsPath) {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::Int64Type;
    let table = Table::from_storage(local_storage(dir));
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let (_, batches) = snapshot.files(false).await.unwrap();
    let mut recorded = 0i64;
    for batch in batches {
        let records = batch.column_by_name("num_records").unwrap();
        let records = records.as_primitive::<Int64Type>();
        let dvs = batch.column_by_name("deletion_vector").unwrap().as_struct();
        let deleted = dvs.column_by_name("cardinality").unwrap();
        let deleted = deleted.as_primitive::<Int64Type>();
        for row in 0..batch.num_rows() {
            recorded += records.value(row);
            if dvs.is_valid(row) {
                recorded -= deleted.value(row);
            }
        }
    }
    let scan = deltalog_core::Scan::new(&snapshot, deltalog_core::ScanOptions::default())
        .await
        .unwrap();
    let batches = scan.to_batches().await.unwrap();
    let scanned: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(scanned as i64, recorded, "{name}: rows scanned");
}

/// The live file paths of the latest snapshot, loaded through a store of its own.
async fn live_paths(dir: &FsPath) -> HashSet<String> {
    let table = Table::from_storage(local_storage(dir));
    let snapshot = table.snapshot(SnapshotAt::Latest).await.unwrap();
    let (_, batches) = snapshot.files(false).await.unwrap();
    let mut paths = HashSet::new();
    for batch in batches {
        let column = batch.column_by_name("path").unwrap();
        let column = column
            .as_any()
            .downcast_ref::<arrow::array::StringArray>()
            .unwrap();
        paths.extend(column.iter().flatten().map(str::to_string));
    }
    paths
}

/// Sets the modification time of every file in `dir`'s log `age` back.
fn age_the_log(dir: &FsPath, age: Duration) {
    let old = SystemTime::now() - age;
    for entry in std::fs::read_dir(dir.join("_delta_log")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(old).unwrap();
        }
    }
}
