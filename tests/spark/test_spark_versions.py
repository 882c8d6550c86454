"""deltalog.spark on the newest pyspark (4.3.0, for which no Delta jars exist) and over Spark
Connect: ``pipeline_script.py`` runs one pipeline (the data source's writes, appends,
overwrites, stream and reads, then ``DeltaTable``'s verbs) in a subprocess under the
Python of ``.venv-spark43``, which ``bash .ci/spark-next`` creates with pyspark 4.3.0, its
Spark Connect client and the deltalog wheel. Once in classic local mode, once as a Spark
Connect client of a local Connect server; the script checks every step against rows computed
in plain Python and against deltalog's core.

``$DELTALOG_SPARK_NEXT_VENV`` names another virtualenv to run it in (pyspark 4.0.5 and 4.1.4
pass too, classic and Connect, with deltalog installed). Without the virtualenv these tests
are skipped, saying so (or fail, when ``$DELTALOG_REQUIRE_SPARK`` is set, as in CI).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("DELTALOG_SPARK_NEXT_VENV", REPO_ROOT / ".venv-spark43"))
PYTHON = VENV / "bin" / "python"
SCRIPT = Path(__file__).with_name("pipeline_script.py")
#: The pyspark version ``.ci/spark-next`` installs (another virtualenv may hold any 4.x).
PYSPARK_VERSION = "4.3.0" if "DELTALOG_SPARK_NEXT_VENV" not in os.environ else "4."
#: Seconds one mode may take (it takes about a minute on two cores).
TIMEOUT = 600
#: What the subprocess must not inherit: the suite's own Spark settings.
_INHERITED = ("SPARK_HOME", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE", "SPARK_CONNECT_MODE_ENABLED")


def unavailable() -> str | None:
    """Why the pyspark 4.3 pipeline cannot run here, or ``None`` when it can."""
    if not PYTHON.exists():
        return f"{PYTHON} is missing (run `bash .ci/spark-next`)"
    if shutil.which("java") is None and "JAVA_HOME" not in os.environ:
        return "no Java runtime (java on PATH or JAVA_HOME)"
    return None


@pytest.mark.parametrize("mode", ["classic", "connect"])
def test_pipeline_runs_on_pyspark_4_3(mode: str, tmp_path: Path) -> None:
    reason = unavailable()
    if reason is not None:
        if os.environ.get("DELTALOG_REQUIRE_SPARK"):
            pytest.fail(f"DELTALOG_REQUIRE_SPARK is set, but {reason}")
        pytest.skip(reason)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in _INHERITED and not key.startswith(("PYSPARK_", "PYTHON"))
    }
    started = time.monotonic()
    # A session of its own: on a timeout the whole group goes, the Connect server's JVM too.
    process = subprocess.Popen(
        [str(PYTHON), str(SCRIPT), mode, str(tmp_path / "work")],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"the {mode} pipeline took over {TIMEOUT} s:\n{stdout}\n{stderr}")
    took = time.monotonic() - started
    output = f"--- stdout\n{stdout}\n--- stderr (last 200 lines)\n" + "\n".join(
        stderr.splitlines()[-200:]
    )
    assert process.returncode == 0, f"the {mode} pipeline failed ({took:.0f} s):\n{output}"
    assert f"pyspark {PYSPARK_VERSION}" in stdout, output
    assert "pipeline passed" in stdout, output
    session = "pyspark.sql.connect.session" if mode == "connect" else "pyspark.sql.session"
    assert f"session: {session}.SparkSession" in stdout, output
