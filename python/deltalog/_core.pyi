# Type stubs of the extension module deltalog._core (crates/deltalog-python), checked by
# `python -m mypy.stubtest deltalog._core`. Use the wrappers in `deltalog` instead.

from typing import Any, TypeAlias, final

__all__ = [
    "DEFAULT_OPEN_COST",
    "DEFAULT_TARGET_SIZE",
    "RawArrowStream",
    "RawDeltaTable",
    "RawScan",
    "RawSchema",
    "RawSnapshot",
    "RawTransaction",
    "__version__",
    "delete_rows",
    "parse_timestamp_ms",
    "update_rows",
]

_CommitTuple: TypeAlias = tuple[int, bool, int, RawSnapshot | None, dict[str, int]]

__version__: str
DEFAULT_TARGET_SIZE: int
DEFAULT_OPEN_COST: int

def parse_timestamp_ms(text: str) -> int: ...
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
