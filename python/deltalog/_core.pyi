# Type stubs of the extension module deltalog._core (crates/deltalog-python), checked by
# `python -m mypy.stubtest deltalog._core`. Use the wrappers in `deltalog` instead.

from typing import Any, TypeAlias, final

__all__ = [
    "DEFAULT_OPEN_COST",
    "DEFAULT_TARGET_SIZE",
    "RawAlter",
    "RawArrowStream",
    "RawDeltaTable",
    "RawScan",
    "RawSchema",
    "RawSnapshot",
    "RawTransaction",
    "__version__",
    "cleanup_metadata",
    "commit_distributed_write",
    "compact_logs",
    "convert_to_delta",
    "delete_rows",
    "distributed_file_paths",
    "merge_rows",
    "optimize",
    "parse_timestamp_ms",
    "plan_distributed_write",
    "restore",
    "stream_initial_offset",
    "stream_latest_offset",
    "stream_tasks",
    "update_rows",
    "vacuum",
    "validate_checksum",
    "version_checksum",
    "write_checkpoint",
    "write_distributed_files",
]

_CheckpointTuple: TypeAlias = tuple[int, str, list[str], list[str], int, int, int, bool]
_CleanupTuple: TypeAlias = tuple[int | None, list[str], list[str], str | None]
_PostCommitTuple: TypeAlias = tuple[
    str | None, _CheckpointTuple | None, _CleanupTuple | None, list[tuple[str, str]]
]
_CommitTuple: TypeAlias = tuple[
    int, bool, int, RawSnapshot | None, dict[str, int], _PostCommitTuple
]
_ChecksumTuple: TypeAlias = tuple[
    tuple[str | None, int, int, int, int, int | None],
    tuple[
        list[tuple[str, int, int | None]] | None,
        list[tuple[str, str]] | None,
        tuple[list[int], list[int], list[int]] | None,
        int | None,
        int | None,
    ],
    str,
    bool,
]

__version__: str
DEFAULT_TARGET_SIZE: int
DEFAULT_OPEN_COST: int

def parse_timestamp_ms(text: str) -> int: ...
def plan_distributed_write(
    uri: str, data: Any, options: str, storage_options: dict[str, str] | None = None
) -> str: ...
def write_distributed_files(
    uri: str, plan: str, data: Any, storage_options: dict[str, str] | None = None
) -> bytes: ...
def commit_distributed_write(
    uri: str,
    plan: str,
    files: list[bytes],
    micro_batch: tuple[str, str, int] | None = None,
    storage_options: dict[str, str] | None = None,
) -> _CommitTuple: ...
def distributed_file_paths(files: bytes) -> list[str]: ...
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
) -> dict[str, Any]: ...
def restore(
    table: RawDeltaTable,
    version: int | None = None,
    timestamp_ms: int | None = None,
    dry_run: bool = False,
) -> dict[str, int | None]: ...
def convert_to_delta(
    uri: str, partition_by: object = None, storage_options: dict[str, str] | None = None
) -> tuple[int, bool, int]: ...
def write_checkpoint(
    table: RawDeltaTable,
    version: int | None = None,
    part_size: int | None = None,
    v2_format: str | None = None,
    v2_sidecars: bool = True,
    classic_compat: bool = False,
    dry_run: bool = False,
) -> _CheckpointTuple: ...
def cleanup_metadata(table: RawDeltaTable, dry_run: bool = False) -> _CleanupTuple: ...
def compact_logs(table: RawDeltaTable, start_version: int, end_version: int) -> str: ...
def version_checksum(snapshot: RawSnapshot) -> _ChecksumTuple: ...
def validate_checksum(snapshot: RawSnapshot) -> bool: ...
def delete_rows(
    uri: str,
    predicate: object | None = None,
    target_file_size: int | None = None,
    commit_info: str | None = None,
    storage_options: dict[str, str] | None = None,
) -> _CommitTuple: ...
def update_rows(
    uri: str,
    set: list[tuple[str, str]],
    predicate: object | None = None,
    target_file_size: int | None = None,
    commit_info: str | None = None,
    storage_options: dict[str, str] | None = None,
) -> _CommitTuple: ...
def merge_rows(
    uri: str,
    source: object,
    on: str,
    clauses: list[tuple[str, str | None, list[tuple[str, str]]]],
    source_alias: str,
    target_alias: str,
    target_file_size: int | None = None,
    commit_info: str | None = None,
    storage_options: dict[str, str] | None = None,
) -> _CommitTuple: ...

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
    ) -> tuple[RawDeltaTable, _CommitTuple]: ...
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
        commit_info: str | None = None,
        storage_options: dict[str, str] | None = None,
        predicate_check: bool = True,
    ) -> _CommitTuple: ...
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
    def protocol(self) -> tuple[int, int, list[str] | None, list[str] | None]: ...
    def metadata(
        self,
    ) -> tuple[
        str,
        str | None,
        str | None,
        list[str],
        dict[str, str],
        int | None,
        str,
        dict[str, str],
        str | None,
    ]: ...
    def files(self, with_stats: bool = False) -> RawArrowStream: ...
    def transaction_version(self, app_id: str) -> int | None: ...
    def domain_metadata(self, domain: str) -> str | None: ...
    def scan(
        self,
        columns: list[str] | None = None,
        filter: object | None = None,
        timezone: str | None = None,
        row_tracking: bool = False,
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
    def commit(self) -> _CommitTuple: ...
    def written_files(self) -> list[str]: ...

@final
class RawAlter:
    def __new__(cls, snapshot: RawSnapshot) -> RawAlter: ...
    def set_properties(self, properties: dict[str, str]) -> _CommitTuple: ...
    def unset_properties(self, keys: list[str], if_exists: bool = False) -> _CommitTuple: ...
    def add_columns(self, fields: object, parent: str | None = None) -> _CommitTuple: ...
    def rename_column(self, source: str, name: str) -> _CommitTuple: ...
    def drop_columns(self, columns: list[str], if_exists: bool = False) -> _CommitTuple: ...
    def add_constraint(self, name: str, expression: str) -> _CommitTuple: ...
    def drop_constraint(self, name: str, if_exists: bool = False) -> _CommitTuple: ...
    def add_feature(self, name: str) -> _CommitTuple: ...
    def set_description(self, text: str) -> _CommitTuple: ...

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
