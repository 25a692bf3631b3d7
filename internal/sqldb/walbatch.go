package sqldb

import (
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// walBatchVFSName is the VFS the committer's connection opens the database through:
// SQLite's own unix VFS, every method its own, except that the write-ahead log's appends
// are gathered in memory and handed to the kernel in one pwrite when the commit's last
// frame is complete, instead of two pwrites a frame (its 24-byte header, then its page:
// walWriteOneFrame). A commit of twenty pages made forty system calls; it makes one. On a
// virtual machine a system call costs microseconds (docs/perf/issue-35.md, "The log's
// writes in one system call").
//
// Why nothing acknowledged is lost and no reader sees less than was committed:
//   - A commit is published to other connections by the wal-index header, which SQLite
//     writes after every frame of the commit (sqlite3WalFrames, then walIndexWriteHdr).
//     The buffer is written out when the commit frame's page is appended (its header's
//     commit field is not zero), so before the header; a write error fails that xWrite,
//     and so the commit, as unix's own would.
//   - Every other method of the log (read, sync, truncate, size, file control, fetch,
//     close) writes the buffer out first, so SQLite reads back what it wrote and syncs
//     what it means to (synchronous=FULL syncs the log before publishing).
//   - Writes are buffered only as one run of consecutive bytes: a write anywhere else
//     writes the buffer out first, so the file sees the writes in SQLite's order.
//   - A commit frame's header written with nothing before it in the buffer (the rewrite
//     of checksums, walRewriteChecksums, or a commit of one page) is written at once, and
//     the page after it too.
//   - After a commit frame's page, every write until the next frame header goes to the
//     file at once: the padding frames and the pieces of a frame split around a sync
//     (synchronous=FULL without powersafe overwrite) are published with the commit.
//   - Before the write lock (wal-index lock 0) is let go, the database file's xShmLock
//     writes out whatever its log still holds: frames of a transaction that spilled and
//     was rolled back (SQLite's undo writes nothing to the log). Written later, without
//     the lock, they could land on frames another writer committed since
//     (TestWalBatchRollbackThenOtherWriter).
//   - As a last guard, the database file's xShmBarrier, which walIndexWriteHdr calls
//     between its two copies of the header, writes out whatever a log of the same
//     database still holds (the tests count those: none, by the rules above).
//   - A kill -9 loses only what no commit returned for: the buffer holds frames no commit
//     has published, never one that was acknowledged.
//
// The VFS also keeps the connection's unnamed temporary files in memory (walbatch_temp.go).
//
// SQLite's VFS registry is process-wide, so this one is too: it is registered once, on
// first use, and its tables of open files are the only state, guarded by mu.
const walBatchVFSName = "ledger-walbatch"

// walBatchSize is one log's buffer: 60 frames of 2 KiB pages (a commit of the cycle
// writes 10 to 40); a larger commit goes out in pieces of this size. It must stay below
// 128 KiB: unix's seekAndWriteFd masks a write's length with 0x1ffff, so a longer write
// would be cut short (and one of 128 KiB exactly would write nothing and fail SQLITE_FULL).
const walBatchSize = 124 << 10

type walBatchVFS struct {
	unix uintptr // SQLite's unix VFS, which does the work

	mu sync.Mutex
	// walTables and dbTables map an io methods table unix gives its files (the main
	// database gets one with POSIX locks, its log one without) to a copy of it with this
	// file's methods in place, made at the first open of each.
	walTables, dbTables map[uintptr]uintptr
	wal                 map[uintptr]*walBatch // a log's sqlite3_file → its buffer
	db                  map[uintptr]walDB     // a main database's sqlite3_file → what it is
	// temps: an unnamed temporary file's sqlite3_file → its bytes (walbatch_temp.go);
	// tempTable their methods, tempOpens how many were opened (the tests read it).
	temps     map[uintptr]*memTempFile
	tempTable uintptr
	tempOpens int64
}

// walDB is a main database file open through the VFS: its name, and unix's methods.
type walDB struct {
	name string
	real uintptr
}

// walBatch is one open log's buffer: n bytes at C memory buf, for the file at off.
type walBatch struct {
	db   string  // the database's name: the log's without "-wal"
	real uintptr // unix's methods for the file
	buf  uintptr
	n    int64
	off  int64
	// commitPage is the offset of the page whose header said it ends a commit: written out
	// as soon as it is appended. -1: none expected.
	commitPage int64
	// committed: a commit frame's header was seen and no frame header since. Every write
	// until the next frame header (the commit frame's page, padding frames, the pieces of a
	// frame split around a sync, the rewrite of checksums) goes to the file at once.
	committed bool
	// writes counts SQLite's writes to the log, issued unix's, and late the barriers that
	// found bytes not yet written out (none, by the rules above): TestWalBatch reads them.
	writes, issued, late int64
}

var (
	walBatchOnce = sync.OnceValues(registerWalBatchVFS)
	// walBatchRegistered is what registerWalBatchVFS made, for the methods SQLite calls.
	walBatchRegistered atomic.Pointer[walBatchVFS]
)

// The C signatures of the methods called through pointers. Tsqlite3_int64 is int64.
type (
	xOpenFunc    = func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32
	xFileFunc    = func(*libc.TLS, uintptr) int32
	xRWFunc      = func(*libc.TLS, uintptr, uintptr, int32, int64) int32
	xTruncFunc   = func(*libc.TLS, uintptr, int64) int32
	xIntFunc     = func(*libc.TLS, uintptr, int32) int32
	xPtrFunc     = func(*libc.TLS, uintptr, uintptr) int32
	xControlFunc = func(*libc.TLS, uintptr, int32, uintptr) int32
	xBarrierFunc = func(*libc.TLS, uintptr)
	xShmLockFunc = func(*libc.TLS, uintptr, int32, int32, int32) int32
	xFetchFunc   = func(*libc.TLS, uintptr, int64, int32, uintptr) int32
	xUnfetchFunc = func(*libc.TLS, uintptr, int64, uintptr) int32
)

// cfunc is the C function pointer p as a Go func of type F: the transpiled SQLite keeps a
// function pointer as the address of a Go func value, and calls it this way.
func cfunc[F any](p uintptr) F { return *(*F)(unsafe.Pointer(&p)) }

// setcfunc stores the Go func f in the C function pointer at *slot.
func setcfunc[F any](slot *uintptr, f F) { *(*F)(unsafe.Pointer(slot)) = f }

func registerWalBatchVFS() (*walBatchVFS, error) {
	tls := libc.NewTLS()
	defer tls.Close()
	unix := sqlite3.Xsqlite3_vfs_find(tls, 0)
	if unix == 0 {
		return nil, errors.New("sqlite: no default VFS")
	}
	size := unsafe.Sizeof(sqlite3.Tsqlite3_vfs{})
	// Allocated with libc's malloc and never freed: SQLite keeps a registered VFS until
	// the process ends.
	vfs := libc.Xmalloc(tls, uint64(size))
	name, err := libc.CString(walBatchVFSName)
	if vfs == 0 || err != nil {
		return nil, errors.New("sqlite: out of memory registering " + walBatchVFSName)
	}
	v := (*sqlite3.Tsqlite3_vfs)(cmem(vfs))
	*v = *(*sqlite3.Tsqlite3_vfs)(cmem(unix))
	v.FzName = name
	v.FpNext = 0
	setcfunc[xOpenFunc](&v.FxOpen, walBatchOpen)
	w := &walBatchVFS{unix: unix, walTables: map[uintptr]uintptr{}, dbTables: map[uintptr]uintptr{},
		wal: map[uintptr]*walBatch{}, db: map[uintptr]walDB{}, temps: map[uintptr]*memTempFile{}}
	walBatchRegistered.Store(w)
	if rc := sqlite3.Xsqlite3_vfs_register(tls, vfs, 0); rc != sqlite3.SQLITE_OK {
		return nil, errors.New("sqlite: registering " + walBatchVFSName + " failed")
	}
	return w, nil
}

// tableLocked is the copy of unix's methods table m for a log (wal) or a main database,
// made on first use; 0 if it cannot be allocated (the file then stays as unix made it).
func (v *walBatchVFS) tableLocked(tls *libc.TLS, m uintptr, wal bool) uintptr {
	tables := v.dbTables
	if wal {
		tables = v.walTables
	}
	if t, ok := tables[m]; ok {
		return t
	}
	// Allocated with libc's malloc and never freed: a file may use it until it is closed,
	// and the VFS stays registered until the process ends.
	t := libc.Xmalloc(tls, uint64(unsafe.Sizeof(sqlite3.Tsqlite3_io_methods{})))
	if t == 0 {
		return 0
	}
	c := (*sqlite3.Tsqlite3_io_methods)(cmem(t))
	*c = *(*sqlite3.Tsqlite3_io_methods)(cmem(m))
	if wal {
		setcfunc[xFileFunc](&c.FxClose, walBatchClose)
		setcfunc[xRWFunc](&c.FxRead, walBatchRead)
		setcfunc[xRWFunc](&c.FxWrite, walBatchWrite)
		setcfunc[xTruncFunc](&c.FxTruncate, walBatchTruncate)
		setcfunc[xIntFunc](&c.FxSync, walBatchSync)
		setcfunc[xPtrFunc](&c.FxFileSize, walBatchFileSize)
		setcfunc[xControlFunc](&c.FxFileControl, walBatchFileControl)
		if c.FiVersion >= 3 {
			setcfunc[xFetchFunc](&c.FxFetch, walBatchFetch)
			setcfunc[xUnfetchFunc](&c.FxUnfetch, walBatchUnfetch)
		}
	} else {
		setcfunc[xFileFunc](&c.FxClose, walBatchDBClose)
		if c.FiVersion >= 2 && c.FxShmBarrier != 0 {
			setcfunc[xBarrierFunc](&c.FxShmBarrier, walBatchDBBarrier)
		}
		if c.FiVersion >= 2 && c.FxShmLock != 0 {
			setcfunc[xShmLockFunc](&c.FxShmLock, walBatchDBShmLock)
		}
	}
	tables[m] = t
	return t
}

func methods(m uintptr) *sqlite3.Tsqlite3_io_methods {
	return (*sqlite3.Tsqlite3_io_methods)(cmem(m))
}

func walBatchOpen(tls *libc.TLS, _, zName, pFile uintptr, flags int32, pOutFlags uintptr) int32 {
	v := walBatchRegistered.Load()
	if zName == 0 {
		return v.openMemTemp(tls, pFile, flags, pOutFlags)
	}
	u := (*sqlite3.Tsqlite3_vfs)(cmem(v.unix))
	rc := cfunc[xOpenFunc](u.FxOpen)(tls, v.unix, zName, pFile, flags, pOutFlags)
	kind := flags & (sqlite3.SQLITE_OPEN_WAL | sqlite3.SQLITE_OPEN_MAIN_DB)
	if rc != sqlite3.SQLITE_OK || zName == 0 || kind == 0 {
		return rc
	}
	f := (*sqlite3.Tsqlite3_file)(cmem(pFile))
	v.mu.Lock()
	defer v.mu.Unlock()
	real := f.FpMethods
	if real == 0 {
		return rc
	}
	wal := kind == sqlite3.SQLITE_OPEN_WAL
	t := v.tableLocked(tls, real, wal)
	if t == 0 {
		return rc // the file works as unix's own
	}
	name := libc.GoString(zName)
	if !wal {
		v.db[pFile] = walDB{name: name, real: real}
		f.FpMethods = t
		return rc
	}
	buf := sqlite3.Xsqlite3_malloc64(tls, walBatchSize)
	if buf == 0 {
		return rc
	}
	v.wal[pFile] = &walBatch{db: strings.TrimSuffix(name, "-wal"), real: real, buf: buf, commitPage: -1}
	f.FpMethods = t
	return rc
}

// flushLocked writes the buffer out.
func (v *walBatchVFS) flushLocked(tls *libc.TLS, pFile uintptr, b *walBatch) int32 {
	b.commitPage = -1
	if b.n == 0 {
		return sqlite3.SQLITE_OK
	}
	n, off := b.n, b.off
	b.n = 0
	b.issued++
	return cfunc[xRWFunc](methods(b.real).FxWrite)(tls, pFile, b.buf, int32(n), off)
}

// walBatchBefore writes the log pFile's buffer out ahead of another of its methods, and
// returns unix's methods for it.
func walBatchBefore(tls *libc.TLS, pFile uintptr) (*sqlite3.Tsqlite3_io_methods, int32) {
	v := walBatchRegistered.Load()
	v.mu.Lock()
	defer v.mu.Unlock()
	b := v.wal[pFile]
	return methods(b.real), v.flushLocked(tls, pFile, b)
}

func walBatchWrite(tls *libc.TLS, pFile, pBuf uintptr, amt int32, off int64) int32 {
	v := walBatchRegistered.Load()
	v.mu.Lock()
	defer v.mu.Unlock()
	b := v.wal[pFile]
	b.writes++
	write := cfunc[xRWFunc](methods(b.real).FxWrite)
	n := int64(amt)
	src := unsafe.Slice((*byte)(cmem(pBuf)), n)
	commitHeader := n == walFrameHeader && binary.BigEndian.Uint32(src[4:8]) != 0
	if n == walFrameHeader {
		b.committed = false
	}
	if b.committed {
		if rc := v.flushLocked(tls, pFile, b); rc != sqlite3.SQLITE_OK {
			return rc
		}
		b.issued++
		return write(tls, pFile, pBuf, amt, off)
	}
	if b.n > 0 && off != b.off+b.n {
		if rc := v.flushLocked(tls, pFile, b); rc != sqlite3.SQLITE_OK {
			return rc
		}
	}
	if b.n+n > walBatchSize || (commitHeader && b.n == 0) {
		// Too large to gather, or a commit frame with nothing before it: written at once,
		// and the commit frame's page after it as well.
		expected := b.commitPage
		if rc := v.flushLocked(tls, pFile, b); rc != sqlite3.SQLITE_OK {
			return rc
		}
		if n > walBatchSize || commitHeader || off == expected {
			b.issued++
			rc := write(tls, pFile, pBuf, amt, off)
			if commitHeader {
				b.commitPage = off + n
			} else if off == expected {
				b.committed = true
			}
			return rc
		}
	}
	if b.n == 0 {
		b.off = off
	}
	copy(unsafe.Slice((*byte)(cmem(b.buf+uintptr(b.n))), n), src)
	b.n += n
	switch {
	case commitHeader:
		b.commitPage = off + n
	case off == b.commitPage:
		b.committed = true
		return v.flushLocked(tls, pFile, b)
	}
	return sqlite3.SQLITE_OK
}

// walFrameHeader is the size of a WAL frame's header (https://sqlite.org/fileformat2.html,
// "WAL File Format"); bytes 4 to 7 are the database's size in pages after a commit frame,
// zero on every other frame.
const walFrameHeader = 24

func walBatchRead(tls *libc.TLS, pFile, pBuf uintptr, amt int32, off int64) int32 {
	m, rc := walBatchBefore(tls, pFile)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return cfunc[xRWFunc](m.FxRead)(tls, pFile, pBuf, amt, off)
}

func walBatchTruncate(tls *libc.TLS, pFile uintptr, size int64) int32 {
	m, rc := walBatchBefore(tls, pFile)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return cfunc[xTruncFunc](m.FxTruncate)(tls, pFile, size)
}

func walBatchSync(tls *libc.TLS, pFile uintptr, flags int32) int32 {
	m, rc := walBatchBefore(tls, pFile)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return cfunc[xIntFunc](m.FxSync)(tls, pFile, flags)
}

func walBatchFileSize(tls *libc.TLS, pFile, pSize uintptr) int32 {
	m, rc := walBatchBefore(tls, pFile)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return cfunc[xPtrFunc](m.FxFileSize)(tls, pFile, pSize)
}

func walBatchFileControl(tls *libc.TLS, pFile uintptr, op int32, pArg uintptr) int32 {
	m, rc := walBatchBefore(tls, pFile)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return cfunc[xControlFunc](m.FxFileControl)(tls, pFile, op, pArg)
}

func walBatchFetch(tls *libc.TLS, pFile uintptr, off int64, amt int32, pp uintptr) int32 {
	m, rc := walBatchBefore(tls, pFile)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return cfunc[xFetchFunc](m.FxFetch)(tls, pFile, off, amt, pp)
}

func walBatchUnfetch(tls *libc.TLS, pFile uintptr, off int64, p uintptr) int32 {
	m, rc := walBatchBefore(tls, pFile)
	if rc != sqlite3.SQLITE_OK {
		return rc
	}
	return cfunc[xUnfetchFunc](m.FxUnfetch)(tls, pFile, off, p)
}

func walBatchClose(tls *libc.TLS, pFile uintptr) int32 {
	v := walBatchRegistered.Load()
	v.mu.Lock()
	b := v.wal[pFile]
	rc := v.flushLocked(tls, pFile, b)
	delete(v.wal, pFile)
	sqlite3.Xsqlite3_free(tls, b.buf)
	v.mu.Unlock()
	if crc := cfunc[xFileFunc](methods(b.real).FxClose)(tls, pFile); rc == sqlite3.SQLITE_OK {
		rc = crc
	}
	return rc
}

func walBatchDBClose(tls *libc.TLS, pFile uintptr) int32 {
	v := walBatchRegistered.Load()
	v.mu.Lock()
	d := v.db[pFile]
	delete(v.db, pFile)
	v.mu.Unlock()
	return cfunc[xFileFunc](methods(d.real).FxClose)(tls, pFile)
}

// walBatchDBBarrier is the last guard: a log of this database that still holds bytes
// when its header is about to be published writes them out (b.late counts it). It
// cannot report a failure (xShmBarrier returns nothing), and a reader could then read an
// older log's bytes at those offsets; the rules above leave it nothing to write, which
// the tests check.
func walBatchDBBarrier(tls *libc.TLS, pFile uintptr) {
	v := walBatchRegistered.Load()
	v.mu.Lock()
	d := v.db[pFile]
	v.flushLogsLocked(tls, d.name, true)
	v.mu.Unlock()
	cfunc[xBarrierFunc](methods(d.real).FxShmBarrier)(tls, pFile)
}

// walBatchDBShmLock: before the write lock (wal-index lock 0) is let go, whatever a log of
// this database still holds (frames of a transaction rolled back after it spilled) is
// written out, while no other connection can be writing the log.
func walBatchDBShmLock(tls *libc.TLS, pFile uintptr, ofst, n, flags int32) int32 {
	v := walBatchRegistered.Load()
	v.mu.Lock()
	d := v.db[pFile]
	if ofst == 0 && flags&sqlite3.SQLITE_SHM_UNLOCK != 0 {
		v.flushLogsLocked(tls, d.name, false)
	}
	v.mu.Unlock()
	return cfunc[xShmLockFunc](methods(d.real).FxShmLock)(tls, pFile, ofst, n, flags)
}

// flushLogsLocked writes out what the logs of the database named db still hold, counting
// each as late when a barrier found it (a failure cannot be reported by either caller).
func (v *walBatchVFS) flushLogsLocked(tls *libc.TLS, db string, late bool) {
	for f, b := range v.wal {
		if b.db == db && b.n > 0 {
			if late {
				b.late++
			}
			v.flushLocked(tls, f, b)
		}
	}
}
