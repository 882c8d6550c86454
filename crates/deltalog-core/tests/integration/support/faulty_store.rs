//! `FaultyStore`: an `ObjectStore` wrapper that injects seeded faults at the points a commit
//! goes through (reliability notes §6.3). Every request is classified into a [`Point`] by its
//! operation and the name of the object; a [`Schedule`] decides, from a seeded generator,
//! whether that request gets a [`Fault`] and which one.
//!
//! The faults are the ones real stores and networks produce: a request that fails before
//! reaching the store (a 5xx or a timeout), one that succeeds while its answer is lost, a
//! conditional put that landed but is answered "already exists" (a 5xx retried by the client
//! into a 412), a 409 answered "already exists" with nothing written, a listing that misses
//! the newest commit (a lagging index), and a body cut off in the middle of a read.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

/// Where in a commit's life a request happens, told from its operation and object name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Point {
    /// Listing `_delta_log` (the latest version, the winners of a race, cleanup's listing).
    ListLog,
    /// Reading a commit file `N.json` (snapshot load, winners, the read-back of a commit).
    ReadCommit,
    /// Reading a checkpoint part.
    ReadCheckpoint,
    /// Reading `_last_checkpoint`.
    ReadLastCheckpoint,
    /// Reading a `.crc` file.
    ReadCrc,
    /// Reading a data file (Parquet footer and ranges).
    ReadData,
    /// The size of an object (`HEAD`).
    Head,
    /// Writing a data file.
    WriteData,
    /// The put-if-absent of `N.json`.
    PutCommit,
    /// Writing a checkpoint part.
    WriteCheckpoint,
    /// Writing `_last_checkpoint`.
    WriteLastCheckpoint,
    /// Writing `N.crc`.
    WriteCrc,
    /// Deleting an expired log file (metadata cleanup).
    DeleteLog,
    /// Any other request (listing the table tree, deleting data files, copies).
    Other,
}

impl Point {
    /// The points an append's commit goes through, in the order it meets them (a blind
    /// append reads no data file and asks no object's size).
    pub const ALL: [Point; 11] = [
        Point::ListLog,
        Point::ReadLastCheckpoint,
        Point::ReadCheckpoint,
        Point::ReadCommit,
        Point::ReadCrc,
        Point::WriteData,
        Point::PutCommit,
        Point::WriteCrc,
        Point::WriteCheckpoint,
        Point::WriteLastCheckpoint,
        Point::DeleteLog,
    ];

    /// The points met only after `N.json` landed: a fault there never fails the commit.
    pub fn is_post_commit(self) -> bool {
        matches!(
            self,
            Point::WriteCrc
                | Point::WriteCheckpoint
                | Point::WriteLastCheckpoint
                | Point::DeleteLog
        )
    }
}

/// What goes wrong with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fault {
    /// The request fails before the store acts (a 503, a connection reset, a timeout).
    FailBefore,
    /// The store acts, then the answer is lost (the caller sees a timeout).
    LostResponse,
    /// A put-if-absent lands and is answered "already exists" (the client retried a 5xx and
    /// the retry met its own object).
    LandedButExists,
    /// A put-if-absent is answered "already exists" with nothing written (S3's 409).
    PhantomExists,
    /// A listing misses the newest commit file.
    StaleListing,
    /// A read's body stops half way with an error.
    PartialBody,
}

impl Fault {
    /// The faults that can happen at `point`.
    pub fn possible_at(point: Point) -> &'static [Fault] {
        use Fault::*;
        match point {
            Point::ListLog => &[FailBefore, StaleListing],
            Point::ReadCommit
            | Point::ReadCheckpoint
            | Point::ReadLastCheckpoint
            | Point::ReadCrc
            | Point::ReadData => &[FailBefore, PartialBody],
            Point::Head => &[FailBefore],
            Point::PutCommit => &[FailBefore, LostResponse, LandedButExists, PhantomExists],
            Point::WriteData
            | Point::WriteCheckpoint
            | Point::WriteLastCheckpoint
            | Point::WriteCrc
            | Point::DeleteLog => &[FailBefore, LostResponse],
            Point::Other => &[],
        }
    }
}

/// Which requests get a fault: at the chosen points, each request draws from a generator
/// seeded with `seed` and gets one of the faults possible there with probability
/// `per_mille / 1000`, until `budget` faults were injected. A scripted schedule instead gives
/// its faults in order, each to the next request at its point.
#[derive(Debug)]
pub struct Schedule {
    script: std::collections::VecDeque<(Point, Fault)>,
    points: Vec<Point>,
    per_mille: u64,
    budget: usize,
    state: u64,
    injected: Vec<(Point, Fault, String)>,
    enabled: bool,
}

impl Schedule {
    pub fn new(seed: u64, points: &[Point], per_mille: u64, budget: usize) -> Schedule {
        Schedule {
            script: Default::default(),
            points: points.to_vec(),
            per_mille,
            budget,
            state: seed ^ 0x9E37_79B9_7F4A_7C15,
            injected: Vec::new(),
            enabled: true,
        }
    }

    /// The faults of `script`, in order, each given to the next request at its point.
    pub fn scripted(script: &[(Point, Fault)]) -> Schedule {
        Schedule {
            script: script.iter().copied().collect(),
            ..Schedule::new(0, &[], 0, 0)
        }
    }

    /// True when every scripted fault was injected.
    pub fn script_done(&self) -> bool {
        self.script.is_empty()
    }

    fn next(&mut self) -> u64 {
        // splitmix64
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn draw(&mut self, point: Point, location: &Path) -> Option<Fault> {
        if !self.enabled {
            return None;
        }
        if let Some(&(scripted, fault)) = self.script.front() {
            if scripted != point {
                return None;
            }
            self.script.pop_front();
            self.injected
                .push((point, fault, location.as_ref().to_string()));
            return Some(fault);
        }
        if self.injected.len() >= self.budget
            || self.injected.len() >= self.budget
            || !self.points.contains(&point)
        {
            return None;
        }
        let possible = Fault::possible_at(point);
        if possible.is_empty() || self.next() % 1000 >= self.per_mille {
            return None;
        }
        let fault = possible[(self.next() % possible.len() as u64) as usize];
        self.injected
            .push((point, fault, location.as_ref().to_string()));
        Some(fault)
    }
}

/// An object store that injects the faults of a [`Schedule`] into the requests it forwards to
/// `inner`.
#[derive(Debug, Clone)]
pub struct FaultyStore {
    inner: Arc<dyn ObjectStore>,
    schedule: Arc<Mutex<Schedule>>,
}

impl FaultyStore {
    pub fn new(inner: Arc<dyn ObjectStore>, schedule: Schedule) -> FaultyStore {
        FaultyStore {
            inner,
            schedule: Arc::new(Mutex::new(schedule)),
        }
    }

    /// The faults injected so far: point, fault and object.
    pub fn injected(&self) -> Vec<(Point, Fault, String)> {
        self.schedule.lock().unwrap().injected.clone()
    }

    /// True when every scripted fault was injected.
    pub fn script_done(&self) -> bool {
        self.schedule.lock().unwrap().script_done()
    }

    /// Turns injection on or off (off while the test sets up or checks).
    pub fn set_enabled(&self, enabled: bool) {
        self.schedule.lock().unwrap().enabled = enabled;
    }

    fn draw(&self, point: Point, location: &Path) -> Option<Fault> {
        self.schedule.lock().unwrap().draw(point, location)
    }
}

impl fmt::Display for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyStore({})", self.inner)
    }
}

/// The point of a write, read or delete of `location`.
pub fn classify(location: &Path, writing: bool) -> Point {
    let text = location.as_ref();
    let in_log = text.contains("_delta_log/");
    let name = location.filename().unwrap_or_default();
    let is_commit = name.len() == 25
        && name.ends_with(".json")
        && name[..20].bytes().all(|b| b.is_ascii_digit());
    match (in_log, writing) {
        (false, true) => Point::WriteData,
        (false, false) => Point::ReadData,
        (true, true) if is_commit => Point::PutCommit,
        (true, true) if name.contains(".checkpoint.") => Point::WriteCheckpoint,
        (true, true) if name == "_last_checkpoint" => Point::WriteLastCheckpoint,
        (true, true) if name.ends_with(".crc") => Point::WriteCrc,
        (true, false) if is_commit => Point::ReadCommit,
        (true, false) if name.contains(".checkpoint.") => Point::ReadCheckpoint,
        (true, false) if name == "_last_checkpoint" => Point::ReadLastCheckpoint,
        (true, false) if name.ends_with(".crc") => Point::ReadCrc,
        _ => Point::Other,
    }
}

fn injected(what: &str, location: &Path) -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultyStore",
        source: format!("injected fault: {what} ({location})").into(),
    }
}

fn is_commit_file(meta: &ObjectMeta) -> bool {
    classify(&meta.location, false) == Point::ReadCommit
}

/// `listing` without its newest commit file.
fn without_newest_commit(mut listing: Vec<ObjectMeta>) -> Vec<ObjectMeta> {
    let newest = listing
        .iter()
        .filter(|meta| is_commit_file(meta))
        .map(|meta| meta.location.clone())
        .max();
    if let Some(newest) = newest {
        listing.retain(|meta| meta.location != newest);
    }
    listing
}

impl FaultyStore {
    async fn faulty_list(
        self,
        prefix: Option<Path>,
        offset: Option<Path>,
    ) -> object_store::Result<Vec<ObjectMeta>> {
        let log_listing = prefix
            .as_ref()
            .is_some_and(|p| p.as_ref().ends_with("_delta_log"));
        let point = if log_listing {
            Point::ListLog
        } else {
            Point::Other
        };
        let fault = prefix.as_ref().and_then(|p| self.draw(point, p));
        if fault == Some(Fault::FailBefore) {
            return Err(injected("listing failed", prefix.as_ref().unwrap()));
        }
        let stream = match &offset {
            Some(offset) => self.inner.list_with_offset(prefix.as_ref(), offset),
            None => self.inner.list(prefix.as_ref()),
        };
        let listing: Vec<ObjectMeta> = stream.try_collect().await?;
        Ok(match fault {
            Some(Fault::StaleListing) => without_newest_commit(listing),
            _ => listing,
        })
    }
}

#[async_trait]
impl ObjectStore for FaultyStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let create = matches!(opts.mode, PutMode::Create);
        match self.draw(classify(location, true), location) {
            None => self.inner.put_opts(location, payload, opts).await,
            Some(Fault::FailBefore) => Err(injected("put failed before the store", location)),
            Some(Fault::PhantomExists) if create => Err(object_store::Error::AlreadyExists {
                path: location.to_string(),
                source: "injected fault: 409 with nothing written".into(),
            }),
            Some(Fault::LandedButExists) if create => {
                self.inner.put_opts(location, payload, opts).await?;
                Err(object_store::Error::AlreadyExists {
                    path: location.to_string(),
                    source: "injected fault: landed, the retried request met it".into(),
                })
            }
            Some(_) => {
                self.inner.put_opts(location, payload, opts).await?;
                Err(injected("put landed, its answer was lost", location))
            }
        }
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        match self.draw(classify(location, true), location) {
            Some(Fault::FailBefore) => Err(injected("multipart start failed", location)),
            _ => self.inner.put_multipart_opts(location, opts).await,
        }
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let point = match options.head {
            true => Point::Head,
            false => classify(location, false),
        };
        let fault = self.draw(point, location);
        if fault == Some(Fault::FailBefore) {
            return Err(injected("get failed", location));
        }
        let mut result = self.inner.get_opts(location, options).await?;
        if fault != Some(Fault::PartialBody) {
            return Ok(result);
        }
        let empty = futures::stream::empty().boxed();
        let payload = std::mem::replace(&mut result.payload, GetResultPayload::Stream(empty));
        let whole = GetResult {
            payload,
            meta: result.meta.clone(),
            range: result.range.clone(),
            attributes: result.attributes.clone(),
            extensions: Default::default(),
        }
        .bytes()
        .await?;
        let half = whole.slice(..whole.len() / 2);
        let cut = injected("body cut off", location);
        result.payload =
            GetResultPayload::Stream(futures::stream::iter([Ok(half), Err(cut)]).boxed());
        Ok(result)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        let this = self.clone();
        locations
            .and_then(move |location| {
                let this = this.clone();
                async move {
                    let in_log = location.as_ref().contains("_delta_log/");
                    let point = if in_log {
                        Point::DeleteLog
                    } else {
                        Point::Other
                    };
                    let fault = this.draw(point, &location);
                    if fault == Some(Fault::FailBefore) {
                        return Err(injected("delete failed", &location));
                    }
                    let once = futures::stream::iter([Ok(location.clone())]).boxed();
                    let deleted: Vec<Path> = this.inner.delete_stream(once).try_collect().await?;
                    match fault {
                        Some(_) => Err(injected("deleted, the answer was lost", &location)),
                        None => Ok(deleted.into_iter().next().unwrap_or(location)),
                    }
                }
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let this = self.clone();
        let prefix = prefix.cloned();
        futures::stream::once(this.faulty_list(prefix, None))
            .map_ok(|listing| futures::stream::iter(listing.into_iter().map(Ok)))
            .try_flatten()
            .boxed()
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let this = self.clone();
        let prefix = prefix.cloned();
        let offset = Some(offset.clone());
        futures::stream::once(this.faulty_list(prefix, offset))
            .map_ok(|listing| futures::stream::iter(listing.into_iter().map(Ok)))
            .try_flatten()
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
