# Type stubs of the extension module deltalog._core (crates/deltalog-python), checked by
# `python -m mypy.stubtest deltalog._core`. Use the wrappers in `deltalog` instead.

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, final

#: The kinds of a merge's `WHEN` clauses (`merge_rows`).
_MergeClauseKind: TypeAlias = Literal[
    "matched_update",
    "matched_update_all",
    "matched_delete",
    "not_matched_insert",
    "not_matched_insert_all",
    "not_matched_by_source_update",
    "not_matched_by_source_delete",
]

__all__ = [
    "DEFAULT_OPEN_COST",
    "DEFAULT_TARGET_SIZE",
    "RawAlter",
    "RawArrowStream",
    "RawCheckpoint",
    "RawCleanup",
    "RawCommit",
    "RawDeltaTable",
    "RawMetadata",
    "RawPostCommit",
    "RawProtocol",
    "RawScan",
    "RawSchema",
    "RawSnapshot",
    "RawTransaction",
    "RawVersionChecksum",
    "__version__",
    "change_written_paths",
    "cleanup_metadata",
    "commit_distributed_change",
    "commit_distributed_optimize",
    "commit_distributed_write",
    "compact_logs",
    "convert_to_delta",
    "delete_rows",
    "describe_change_plan",
    "discard_distributed_change",
    "discard_distributed_write",
    "distributed_file_paths",
    "generate_symlink_manifest",
    "merge_rows",
    "merge_target_pruning",
    "optimize",
    "parse_timestamp_ms",
    "plan_distributed_change",
    "plan_distributed_optimize",
    "plan_distributed_write",
    "read_schema_json",
    "restore",
    "rewrite_optimize_bin",
    "shallow_clone",
    "stream_initial_offset",
    "stream_latest_offset",
    "stream_tasks",
    "streaming_query",
    "update_rows",
    "vacuum",
    "validate_checksum",
    "version_checksum",
    "write_change_task",
    "write_checkpoint",
    "write_distributed_files",
]

@final
class RawCommit:
    @property
    def version(self) -> int: ...
    @property
    def committed(self) -> bool: ...
    @property
    def retries(self) -> int: ...
    @property
    def snapshot(self) -> RawSnapshot | None: ...
    @property
    def metrics(self) -> dict[str, int]: ...
    @property
    def post_commit(self) -> RawPostCommit: ...

@final
class RawPostCommit:
    @property
    def checksum(self) -> str | None: ...
    @property
    def checkpoint(self) -> RawCheckpoint | None: ...
    @property
    def checkpoint_deferred(self) -> str | None: ...
    @property
    def cleanup(self) -> RawCleanup | None: ...
    @property
    def errors(self) -> list[tuple[str, str]]: ...

@final
class RawCheckpoint:
    @property
    def version(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def files(self) -> list[str]: ...
    @property
    def sidecars(self) -> list[str]: ...
    @property
    def num_actions(self) -> int: ...
    @property
    def num_add_files(self) -> int: ...
    @property
    def size_in_bytes(self) -> int: ...
    @property
    def dry_run(self) -> bool: ...
    @property
    def incremental_from(self) -> int | None: ...

@final
class RawCleanup:
    @property
    def oldest_kept_version(self) -> int | None: ...
    @property
    def deleted(self) -> list[str]: ...
    @property
    def deleted_sidecars(self) -> list[str]: ...
    @property
    def compat_checkpoint(self) -> str | None: ...

@final
class RawProtocol:
    @property
    def min_reader_version(self) -> int: ...
    @property
    def min_writer_version(self) -> int: ...
    @property
    def reader_features(self) -> list[str] | None: ...
    @property
    def writer_features(self) -> list[str] | None: ...

@final
class RawMetadata:
    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str | None: ...
    @property
    def description(self) -> str | None: ...
    @property
    def partition_columns(self) -> list[str]: ...
    @property
    def configuration(self) -> dict[str, str]: ...
    @property
    def created_time(self) -> int | None: ...
    @property
    def format_provider(self) -> str: ...
    @property
    def format_options(self) -> dict[str, str]: ...
    @property
    def schema_string(self) -> str | None: ...

@final
class RawVersionChecksum:
    @property
    def txn_id(self) -> str | None: ...
    @property
    def table_size_bytes(self) -> int: ...
    @property
    def num_files(self) -> int: ...
    @property
    def num_metadata(self) -> int: ...
    @property
    def num_protocol(self) -> int: ...
    @property
    def in_commit_timestamp(self) -> int | None: ...
    @property
    def set_transactions(self) -> list[tuple[str, int, int | None]] | None: ...
    @property
    def domain_metadata(self) -> list[tuple[str, str]] | None: ...
    @property
    def histogram(self) -> tuple[list[int], list[int], list[int]] | None: ...
    @property
    def num_deleted_records(self) -> int | None: ...
    @property
    def num_deletion_vectors(self) -> int | None: ...
    @property
    def json(self) -> str: ...
    @property
    def stored(self) -> bool: ...

__version__: str
DEFAULT_TARGET_SIZE: int
DEFAULT_OPEN_COST: int

def parse_timestamp_ms(text: str) -> int: ...
def read_schema_json(schema: object) -> str: ...
def plan_distributed_write(
    uri: str, data: Any, options: str, storage_options: dict[str, str] | None = None
) -> str: ...
def write_distributed_files(
    uri: str,
    plan: str,
    data: Any,
    storage_options: dict[str, str] | None = None,
    epoch: int | None = None,
) -> bytes: ...
def commit_distributed_write(
    uri: str,
    plan: str,
    files: list[bytes],
    micro_batch: tuple[str, str, int] | None = None,
    storage_options: dict[str, str] | None = None,
) -> tuple[RawDeltaTable, RawCommit]: ...
def distributed_file_paths(files: bytes) -> list[str]: ...
def discard_distributed_write(
    uri: str, plan: str, storage_options: dict[str, str] | None = None, epoch: int | None = None
) -> None: ...
def plan_distributed_change(
    uri: str, options: str, storage_options: dict[str, str] | None = None
) -> str: ...
def describe_change_plan(plan: str) -> dict[str, Any]: ...
def write_change_task(
    uri: str, plan: str, data: Any, storage_options: dict[str, str] | None = None
) -> bytes: ...
def commit_distributed_change(
    uri: str,
    plan: str,
    outcomes: list[bytes],
    storage_options: dict[str, str] | None = None,
) -> tuple[RawDeltaTable, RawCommit]: ...
def discard_distributed_change(
    uri: str, plan: str, storage_options: dict[str, str] | None = None
) -> None: ...
def change_written_paths(outcome: bytes) -> list[str]: ...
def merge_target_pruning(
    condition: str, target_alias: str
) -> tuple[str | None, list[tuple[str, list[str]]]]: ...
def plan_distributed_optimize(
    uri: str, spec: str, storage_options: dict[str, str] | None = None
) -> tuple[str, int]: ...
def rewrite_optimize_bin(
    uri: str, plan: str, bin: int, storage_options: dict[str, str] | None = None
) -> bytes: ...
def commit_distributed_optimize(
    uri: str,
    plan: str,
    outcomes: list[bytes],
    storage_options: dict[str, str] | None = None,
) -> dict[str, Any]: ...
def streaming_query(
    app_id: str | None = None, checkpoint_location: str | None = None
) -> tuple[str, str]: ...
def stream_initial_offset(
    uri: str,
    starting_version: int | None = None,
    starting_timestamp_ms: int | None = None,
    storage_options: dict[str, str] | None = None,
) -> tuple[int, int, bool]: ...
def stream_latest_offset(
    uri: str,
    start: tuple[int, int, bool],
    max_files: int | None = None,
    max_bytes: int | None = None,
    ignore_deletes: bool = False,
    skip_change_commits: bool = False,
    until_version: int | None = None,
    storage_options: dict[str, str] | None = None,
) -> tuple[int, int, bool]: ...
def stream_tasks(
    uri: str,
    start: tuple[int, int, bool],
    end: tuple[int, int, bool],
    columns: list[str] | None = None,
    ignore_deletes: bool = False,
    skip_change_commits: bool = False,
    target_size: int = ...,
    open_cost: int = ...,
    storage_options: dict[str, str] | None = None,
) -> list[tuple[bytes, int, int]]: ...
def vacuum(
    table: RawDeltaTable,
    retention_hours: float | None = None,
    dry_run: bool = True,
    enforce_retention_duration: bool = True,
) -> dict[str, Any]: ...
def optimize(
    table: RawDeltaTable,
    filter: object = None,
    target_size: int | None = None,
    z_order_by: list[str] | None = None,
    dry_run: bool = False,
    full: bool = False,
) -> dict[str, Any]: ...
def restore(
    table: RawDeltaTable,
    version: int | None = None,
    timestamp_ms: int | None = None,
    dry_run: bool = False,
) -> dict[str, int | None]: ...
def shallow_clone(
    table: RawDeltaTable,
    target: str,
    version: int | None = None,
    timestamp_ms: int | None = None,
    replace: bool = False,
    properties: dict[str, str] | None = None,
    target_storage_options: dict[str, str] | None = None,
) -> RawDeltaTable: ...
def generate_symlink_manifest(table: RawDeltaTable) -> tuple[list[str], list[str]]: ...
def convert_to_delta(
    uri: str, partition_by: object = None, storage_options: dict[str, str] | None = None
) -> RawDeltaTable: ...
def write_checkpoint(
    table: RawDeltaTable,
    version: int | None = None,
    part_size: int | None = None,
    v2_format: str | None = None,
    v2_sidecars: bool = True,
    classic_compat: bool = False,
    dry_run: bool = False,
) -> RawCheckpoint: ...
def cleanup_metadata(table: RawDeltaTable, dry_run: bool = False) -> RawCleanup: ...
def compact_logs(table: RawDeltaTable, start_version: int, end_version: int) -> str: ...
def version_checksum(snapshot: RawSnapshot) -> RawVersionChecksum: ...
def validate_checksum(snapshot: RawSnapshot) -> bool: ...
def delete_rows(
    uri: str,
    predicate: object | None = None,
    target_file_size: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
    storage_options: dict[str, str] | None = None,
) -> RawCommit: ...
def update_rows(
    uri: str,
    set: list[tuple[str, str]],
    predicate: object | None = None,
    target_file_size: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
    storage_options: dict[str, str] | None = None,
) -> RawCommit: ...
def merge_rows(
    uri: str,
    source: object,
    on: str,
    clauses: list[tuple[_MergeClauseKind, str | None, list[tuple[str, str]]]],
    source_alias: str,
    target_alias: str,
    target_file_size: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
    storage_options: dict[str, str] | None = None,
    merge_schema: bool = False,
) -> RawCommit: ...

@final
class RawDeltaTable:
    @staticmethod
    def open(uri: str, storage_options: dict[str, str] | None = None) -> RawDeltaTable: ...
    @staticmethod
    def create(
        uri: str,
        schema: object,
        partition_by: list[str] | None = None,
        configuration: dict[str, str] | None = None,
        name: str | None = None,
        description: str | None = None,
        mode: str = "error",
        storage_options: dict[str, str] | None = None,
        cluster_by: list[str] | None = None,
    ) -> tuple[RawDeltaTable, RawCommit]: ...
    @staticmethod
    def write_table(
        uri: str,
        data: object,
        mode: str = "append",
        partition_by: list[str] | None = None,
        predicate: object | None = None,
        schema_mode: str | None = None,
        configuration: dict[str, str] | None = None,
        target_file_size: int | None = None,
        app_id: str | None = None,
        app_version: int | None = None,
        commit_info: Mapping[str, Any] | None = None,
        storage_options: dict[str, str] | None = None,
        predicate_check: bool = True,
        cluster_by: list[str] | None = None,
        post_commit_checkpoint: bool = True,
    ) -> tuple[RawDeltaTable, RawCommit]: ...
    @property
    def uri(self) -> str: ...
    def latest_version(self) -> int: ...
    def snapshot(
        self,
        version: int | None = None,
        timestamp_ms: int | None = None,
        filter: object | None = None,
    ) -> RawSnapshot: ...
    def history(self, limit: int | None = None) -> RawArrowStream: ...
    def commits(self, start: int, end: int | None = None) -> RawArrowStream: ...
    def changes(
        self,
        start: int,
        end: int | None = None,
        columns: list[str] | None = None,
        filter: object | None = None,
        timezone: str | None = None,
    ) -> RawArrowStream: ...

@final
class RawSnapshot:
    @property
    def version(self) -> int: ...
    @property
    def timestamp_ms(self) -> int: ...
    @property
    def num_files(self) -> int: ...
    @property
    def total_size(self) -> int: ...
    @property
    def files_loaded(self) -> bool: ...
    @property
    def head_checksum(self) -> str | None: ...
    @property
    def partition_columns(self) -> list[str]: ...
    def schema(self) -> RawSchema: ...
    def protocol(self) -> RawProtocol: ...
    def metadata(self) -> RawMetadata: ...
    def files(self, with_stats: bool = False) -> RawArrowStream: ...
    def transaction_version(self, app_id: str) -> int | None: ...
    def domain_metadata(self, domain: str) -> str | None: ...
    def scan(
        self,
        columns: list[str] | None = None,
        filter: object | None = None,
        timezone: str | None = None,
        row_tracking: bool = False,
        row_address: bool = False,
        files: list[str] | None = None,
    ) -> RawScan: ...
    def native_columns(
        self, columns: list[str] | None = None
    ) -> tuple[list[tuple[dict[str, Any], dict[str, Any] | None]], str | None]: ...
    def deletion_vectors(self) -> RawArrowStream: ...
    def refresh(self) -> RawSnapshot: ...

@final
class RawTransaction:
    @staticmethod
    def start(
        snapshot: RawSnapshot, operation: str = "WRITE", isolation_level: str | None = None
    ) -> RawTransaction: ...
    @property
    def read_version(self) -> int | None: ...
    def write(self, data: object) -> int: ...
    def add_files(self, files: object) -> int: ...
    def remove_files(self, filter: object | None = None, paths: list[str] | None = None) -> int: ...
    def record_read(self, filter: object | None = None) -> int: ...
    def set_app_version(self, app_id: str, version: int) -> None: ...
    def app_version(self, app_id: str) -> int | None: ...
    def set_domain_metadata(self, domain: str, configuration: str | None) -> None: ...
    def update_metadata(
        self,
        schema: object | None = None,
        configuration: list[tuple[str, str | None]] | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> None: ...
    def commit(self) -> RawCommit: ...
    def written_files(self) -> list[str]: ...

@final
class RawAlter:
    def __new__(cls, snapshot: RawSnapshot) -> RawAlter: ...
    def set_properties(self, properties: dict[str, str]) -> RawCommit: ...
    def unset_properties(self, keys: list[str], if_exists: bool = False) -> RawCommit: ...
    def add_columns(self, fields: object, parent: str | None = None) -> RawCommit: ...
    def rename_column(self, source: str, name: str) -> RawCommit: ...
    def drop_columns(self, columns: list[str], if_exists: bool = False) -> RawCommit: ...
    def add_constraint(self, name: str, expression: str) -> RawCommit: ...
    def drop_constraint(self, name: str, if_exists: bool = False) -> RawCommit: ...
    def add_feature(self, name: str) -> RawCommit: ...
    def set_description(self, text: str) -> RawCommit: ...
    def cluster_by(self, columns: list[str]) -> RawCommit: ...
    def drop_feature(self, name: str, truncate_history: bool = False) -> RawCommit: ...
    def change_column(
        self,
        column: str,
        data_type: str | None = None,
        comment: str | None = None,
        drop_not_null: bool = False,
        first: bool = False,
        after: str | None = None,
    ) -> RawCommit: ...

@final
class RawScan:
    @staticmethod
    def from_task(task: bytes, storage_options: dict[str, str] | None = None) -> RawScan: ...
    def tasks(self, target_size: int, open_cost: int) -> list[tuple[bytes, int, int]]: ...
    def native_files(self) -> tuple[list[str], str | None]: ...
    @property
    def table_uri(self) -> str: ...
    @property
    def version(self) -> int: ...
    def files(self) -> RawArrowStream: ...
    def to_batches(self) -> RawArrowStream: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def __arrow_c_schema__(self) -> object: ...
    @property
    def column_names(self) -> list[str]: ...

@final
class RawSchema:
    def __arrow_c_schema__(self) -> object: ...
    @property
    def names(self) -> list[str]: ...
    def json(self) -> str: ...
    def fields(self) -> list[dict[str, Any]]: ...

@final
class RawArrowStream:
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def __arrow_c_schema__(self) -> object: ...
    @property
    def num_rows(self) -> int: ...
    @property
    def column_names(self) -> list[str]: ...
    def to_json_rows(self) -> str: ...
