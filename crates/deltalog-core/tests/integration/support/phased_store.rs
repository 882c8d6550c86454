//! `PhasedStore`: an `ObjectStore` wrapper that stops a writer at the points of its commit
//! (reliability notes §6.1, after the phase locks of Delta on Spark's concurrency fuzzer), so
//! that a test can force any ordering of two or three transactions.
//!
//! The points, told from the requests the writer sends:
//! - [`Point::ListLatest`]: listing `_delta_log` after losing the race for a version (the
//!   writer's read of the newest version before it retries);
//! - [`Point::BeforeWrite`] / [`Point::AfterWrite`]: just before the put-if-absent of
//!   `N.json`, and just after it when another writer held the version;
//! - [`Point::PostCommit`]: just after the put-if-absent of `N.json` landed, before the
//!   checksum, checkpoint and log cleanup steps.
//!
//! Each writer reaches the table through its own `PhasedStore` over the same inner store and
//! runs as a task ([`Actor`]); at each point the store reports to the test and waits until the
//! test lets it go on. The store holds no state of the table: a writer that never meets a
//! point behaves exactly as over the inner store.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// A point of a commit where the writer stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Point {
    /// Where the writer's work begins, before it reads the table ([`PhasedStore::start`]).
    Start,
    /// Listing `_delta_log` after losing version `N` (the retry's read of the newest version).
    ListLatest(u64),
    /// Just before the put-if-absent of `N.json`.
    BeforeWrite(u64),
    /// Just after the put-if-absent of `N.json` found another writer's commit there.
    AfterWrite(u64),
    /// Just after `N.json` landed, before the post-commit steps.
    PostCommit(u64),
}

type Report = (Point, oneshot::Sender<()>);

/// The object store of one writer: the inner store, stopping at the commit [`Point`]s.
#[derive(Clone)]
pub struct PhasedStore {
    inner: Arc<dyn ObjectStore>,
    reports: mpsc::UnboundedSender<Report>,
    /// The version whose put-if-absent was lost last, until the next put.
    lost: Arc<Mutex<Option<u64>>>,
}

impl fmt::Debug for PhasedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PhasedStore({})", self.inner)
    }
}

impl fmt::Display for PhasedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl PhasedStore {
    /// A store over `inner` and the receiving end of its reports (for [`Actor::spawn`]).
    pub fn new(inner: Arc<dyn ObjectStore>) -> (PhasedStore, mpsc::UnboundedReceiver<Report>) {
        let (reports, receiver) = mpsc::unbounded_channel();
        let store = PhasedStore {
            inner,
            reports,
            lost: Arc::new(Mutex::new(None)),
        };
        (store, receiver)
    }

    /// Stops at [`Point::Start`]: the first thing a writer's work does, so that the test
    /// decides when it reads the table.
    pub async fn start(&self) {
        self.stop_at(Point::Start).await;
    }

    /// Reports `point` and waits until the test lets the writer go on. When nobody listens
    /// (the actor was dropped), goes on at once.
    async fn stop_at(&self, point: Point) {
        let (go, wait) = oneshot::channel();
        if self.reports.send((point, go)).is_ok() {
            let _ = wait.await;
        }
    }
}

/// The version of a commit file `N.json`, from its path.
pub fn commit_version(location: &Path) -> Option<u64> {
    let text = location.as_ref();
    if !text.contains("_delta_log/") {
        return None;
    }
    let name = location.filename()?;
    let digits = name.strip_suffix(".json")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

#[async_trait]
impl ObjectStore for PhasedStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let version = commit_version(location).filter(|_| matches!(opts.mode, PutMode::Create));
        let Some(version) = version else {
            return self.inner.put_opts(location, payload, opts).await;
        };
        *self.lost.lock().unwrap() = None;
        self.stop_at(Point::BeforeWrite(version)).await;
        let result = self.inner.put_opts(location, payload, opts).await;
        match &result {
            Ok(_) => self.stop_at(Point::PostCommit(version)).await,
            Err(object_store::Error::AlreadyExists { .. }) => {
                *self.lost.lock().unwrap() = Some(version);
                self.stop_at(Point::AfterWrite(version)).await;
            }
            Err(_) => {}
        }
        result
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.phased_list(prefix, None)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.phased_list(prefix, Some(offset))
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

impl PhasedStore {
    /// A listing; one of `_delta_log` right after a lost put first stops at
    /// [`Point::ListLatest`].
    fn phased_list(
        &self,
        prefix: Option<&Path>,
        offset: Option<&Path>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let this = self.clone();
        let prefix = prefix.cloned();
        let offset = offset.cloned();
        let listing = async move {
            let of_log = prefix
                .as_ref()
                .is_some_and(|p| p.as_ref().ends_with("_delta_log"));
            let lost = match of_log {
                true => this.lost.lock().unwrap().take(),
                false => None,
            };
            if let Some(version) = lost {
                this.stop_at(Point::ListLatest(version)).await;
            }
            let stream = match &offset {
                Some(offset) => this.inner.list_with_offset(prefix.as_ref(), offset),
                None => this.inner.list(prefix.as_ref()),
            };
            stream.try_collect::<Vec<ObjectMeta>>().await
        };
        futures::stream::once(listing)
            .map_ok(|listing| futures::stream::iter(listing.into_iter().map(Ok)))
            .try_flatten()
            .boxed()
    }
}

/// How long a test waits for a writer to reach a point before it calls the script wrong.
const PATIENCE: Duration = Duration::from_secs(60);

/// A writer running as a task over its [`PhasedStore`], driven point by point.
pub struct Actor<T> {
    name: String,
    reports: mpsc::UnboundedReceiver<Report>,
    stopped: Option<(Point, oneshot::Sender<()>)>,
    task: JoinHandle<T>,
    /// Every point met, in order.
    pub met: Vec<Point>,
}

impl<T: Send + 'static> Actor<T> {
    /// Starts `work` (which reaches the table through the store whose reports are
    /// `reports`) as the writer `name`. It runs until its first point, where it stops.
    pub fn spawn(
        name: &str,
        reports: mpsc::UnboundedReceiver<Report>,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Actor<T> {
        Actor {
            name: name.to_string(),
            reports,
            stopped: None,
            task: tokio::spawn(work),
            met: Vec::new(),
        }
    }

    /// Lets the writer go on until it reaches `point` (passing every other point), and
    /// stops it there. Panics when the writer finishes first.
    pub async fn until(&mut self, point: Point) {
        self.release();
        let deadline = tokio::time::sleep(PATIENCE);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                report = self.reports.recv() => {
                    let Some((met, go)) = report else {
                        panic!("{} stopped reporting before {point:?}; met {:?}", self.name, self.met);
                    };
                    self.met.push(met);
                    if met == point {
                        self.stopped = Some((met, go));
                        return;
                    }
                    let _ = go.send(());
                }
                _ = &mut self.task => {
                    panic!("{} finished before {point:?}; it met {:?}", self.name, self.met);
                }
                _ = &mut deadline => panic!("{} hung before {point:?}; met {:?}", self.name, self.met),
            }
        }
    }

    /// Lets the writer run to its end (passing every point) and returns what it returned,
    /// with the points it met.
    pub async fn finish(mut self) -> (T, Vec<Point>) {
        self.release();
        let deadline = tokio::time::sleep(PATIENCE);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                Some((met, go)) = self.reports.recv() => {
                    self.met.push(met);
                    let _ = go.send(());
                }
                done = &mut self.task => return (done.unwrap(), self.met),
                _ = &mut deadline => panic!("{} hung; it met {:?}", self.name, self.met),
            }
        }
    }

    fn release(&mut self) {
        if let Some((_, go)) = self.stopped.take() {
            let _ = go.send(());
        }
    }
}
