#!/usr/bin/env python3
"""bench/record_write.py — what a record costs SQLite: the UPDATE of its job's
row (the store before issue 20 session 4) against an INSERT into a table of
records (after), in the store's schema, WAL, synchronous=FULL, N jobs added
first, then their records written 600 to a committed transaction (a turn of
1000 workers x credit 6 / 10). Prints microseconds per record, commits
included.

    python3 bench/record_write.py 100000 update
    python3 bench/record_write.py 100000 insert
"""
import os
import sqlite3
import sys
import time

SCHEMA = """
CREATE TABLE jobs(batch_id TEXT NOT NULL, job_id TEXT NOT NULL, task_hash TEXT NOT NULL,
 language TEXT NOT NULL, spec BLOB NOT NULL, group_id TEXT NOT NULL,
 state INTEGER NOT NULL, attempt INTEGER NOT NULL, worker_id TEXT NOT NULL DEFAULT '',
 t_submitted INTEGER NOT NULL, t_assigned INTEGER NOT NULL DEFAULT 0, seq INTEGER,
 status INTEGER NOT NULL DEFAULT 0, flags TEXT NOT NULL DEFAULT '', record BLOB,
 PRIMARY KEY(batch_id, job_id));
CREATE INDEX jobs_live ON jobs(state) WHERE state < 2;
CREATE UNIQUE INDEX jobs_seq_set ON jobs(batch_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX jobs_group_set ON jobs(batch_id, group_id) WHERE group_id > '';
CREATE INDEX jobs_worker ON jobs(worker_id) WHERE state = 1;
CREATE TABLE records(job INTEGER PRIMARY KEY, batch_id TEXT NOT NULL, seq INTEGER NOT NULL,
 status INTEGER NOT NULL, flags TEXT NOT NULL, worker_id TEXT NOT NULL,
 t_assigned INTEGER NOT NULL, record BLOB NOT NULL);
CREATE UNIQUE INDEX records_seq ON records(batch_id, seq);
"""


def main():
    n, mode = int(sys.argv[1]), sys.argv[2]
    path = "/tmp/cr_record_write.db"
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    d = sqlite3.connect(path, isolation_level=None)
    d.execute("PRAGMA journal_mode=WAL")
    d.execute("PRAGMA synchronous=FULL")
    d.executescript(SCHEMA)
    spec, rec = b"x" * 200, b"r" * 160
    d.execute("BEGIN")
    for i in range(n):
        d.execute("INSERT INTO jobs(batch_id, job_id, task_hash, language, spec, group_id,"
                  " state, attempt, t_submitted) VALUES('bench', ?, 'h', 'c', ?, '', 0, 1, 0)",
                  ("j%07d" % i, spec))
    d.execute("COMMIT")
    t = time.time()
    seq = 0
    for turn in range(0, n, 600):
        rows = []
        for k in range(turn, min(n, turn + 600)):
            seq += 1
            rows.append((k + 1, seq, 1, "", rec, "bw1", 0))
        d.execute("BEGIN")
        if mode == "update":
            d.executemany("UPDATE jobs SET state = 2, seq = ?2, status = ?3, flags = ?4,"
                          " record = ?5, worker_id = ?6, t_assigned = ?7 WHERE rowid = ?1", rows)
        else:
            d.executemany("INSERT INTO records(job, batch_id, seq, status, flags, record,"
                          " worker_id, t_assigned) VALUES(?1, 'bench', ?2, ?3, ?4, ?5, ?6, ?7)",
                          rows)
        d.execute("COMMIT")
    print("%s: %.1f us a record (%d records, commits included)"
          % (mode, (time.time() - t) * 1e6 / n, n))
    d.close()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


if __name__ == "__main__":
    main()
