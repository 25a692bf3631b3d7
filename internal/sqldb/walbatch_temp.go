package sqldb

import (
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// The committer's connection keeps its temporary files in memory, served by this VFS,
// instead of in SQLite's temporary directory: it is opened with temp_store=FILE, and every
// file SQLite asks it for without a name (a sub-journal past its in-memory part, a temporary
// database, a sorter's spill) is a buffer in memory.
//
// Why: under temp_store=MEMORY SQLite keeps a savepoint's sub-journal (the page images a
// group's job and a statement can roll back to) in chunks of about 1 KiB, allocating two or
// three per page image and freeing them at each RELEASE: 47 images a cycle, about 39k
// instructions of the in-process cycle (docs/perf/issue-35.md, "The sub-journal in 64 KiB
// chunks"). Under temp_store=FILE it keeps the first 64 KiB in one chunk and then opens a
// file: in SQLite's own unix VFS, an unnamed file in /var/tmp or $TMPDIR, outside the
// database's volume, holding tenants' page images. Here that file is memory, as under
// temp_store=MEMORY, so nothing of the database is ever written elsewhere than its own
// file and log.
//
// A temporary file is private to the connection that opened it (SQLite opens them
// DELETEONCLOSE and never shares them), so it needs no locks; its bytes are kept in Go
// memory under the VFS's mutex, keyed by the sqlite3_file SQLite allocated. A sort larger
// than the cache now spills its runs here, where under MEMORY SQLite kept them in its own
// heap: the same bytes, held while the statement runs.

// memTempFile is one temporary file's bytes.
type memTempFile struct {
	data []byte
}

// memTempTableLocked is the methods table of the in-memory temporary files, made on first
// use (0 if it cannot be allocated). Version 1: no shared memory, no memory mapping.
func (v *walBatchVFS) memTempTableLocked(tls *libc.TLS) uintptr {
	if v.tempTable != 0 {
		return v.tempTable
	}
	// Allocated with libc's malloc and never freed, as the other tables (walbatch.go).
	t := libc.Xcalloc(tls, 1, uint64(unsafe.Sizeof(sqlite3.Tsqlite3_io_methods{})))
	if t == 0 {
		return 0
	}
	c := (*sqlite3.Tsqlite3_io_methods)(cmem(t))
	c.FiVersion = 1
	setcfunc[xFileFunc](&c.FxClose, memTempClose)
	setcfunc[xRWFunc](&c.FxRead, memTempRead)
	setcfunc[xRWFunc](&c.FxWrite, memTempWrite)
	setcfunc[xTruncFunc](&c.FxTruncate, memTempTruncate)
	setcfunc[xIntFunc](&c.FxSync, memTempSync)
	setcfunc[xPtrFunc](&c.FxFileSize, memTempFileSize)
	setcfunc[xIntFunc](&c.FxLock, memTempLock)
	setcfunc[xIntFunc](&c.FxUnlock, memTempLock)
	setcfunc[xPtrFunc](&c.FxCheckReservedLock, memTempCheckReservedLock)
	setcfunc[xControlFunc](&c.FxFileControl, memTempFileControl)
	setcfunc[xFileFunc](&c.FxSectorSize, memTempSectorSize)
	setcfunc[xFileFunc](&c.FxDeviceCharacteristics, memTempDeviceCharacteristics)
	v.tempTable = t
	return t
}

// openMemTemp makes pFile an in-memory temporary file (SQLite asked for a file without a
// name).
func (v *walBatchVFS) openMemTemp(tls *libc.TLS, pFile uintptr, flags int32, pOutFlags uintptr) int32 {
	v.mu.Lock()
	defer v.mu.Unlock()
	t := v.memTempTableLocked(tls)
	if t == 0 {
		return sqlite3.SQLITE_NOMEM
	}
	v.temps[pFile] = &memTempFile{}
	v.tempOpens++
	(*sqlite3.Tsqlite3_file)(cmem(pFile)).FpMethods = t
	if pOutFlags != 0 {
		*(*int32)(cmem(pOutFlags)) = flags
	}
	return sqlite3.SQLITE_OK
}

// withMemTemp runs fn on the file at pFile under the VFS's mutex. A file the VFS does not
// know (SQLite never calls one) is an I/O error rather than a panic inside SQLite.
func withMemTemp(pFile uintptr, fn func(*walBatchVFS, *memTempFile) int32) int32 {
	v := walBatchRegistered.Load()
	v.mu.Lock()
	defer v.mu.Unlock()
	f := v.temps[pFile]
	if f == nil {
		return sqlite3.SQLITE_IOERR
	}
	return fn(v, f)
}

func memTempClose(_ *libc.TLS, pFile uintptr) int32 {
	return withMemTemp(pFile, func(v *walBatchVFS, _ *memTempFile) int32 {
		delete(v.temps, pFile)
		return sqlite3.SQLITE_OK
	})
}

// memTempRead reads as unix's xRead does: past the end, the rest of the buffer is zeroed
// and the read is short.
func memTempRead(_ *libc.TLS, pFile, pBuf uintptr, amt int32, off int64) int32 {
	return withMemTemp(pFile, func(_ *walBatchVFS, f *memTempFile) int32 {
		dst := unsafe.Slice((*byte)(cmem(pBuf)), int(amt))
		n := 0
		if off < int64(len(f.data)) {
			n = copy(dst, f.data[off:])
		}
		if n < len(dst) {
			clear(dst[n:])
			return sqlite3.SQLITE_IOERR_SHORT_READ
		}
		return sqlite3.SQLITE_OK
	})
}

func memTempWrite(_ *libc.TLS, pFile, pBuf uintptr, amt int32, off int64) int32 {
	return withMemTemp(pFile, func(_ *walBatchVFS, f *memTempFile) int32 {
		if end := int(off) + int(amt); end > len(f.data) {
			// Bytes between the old end and off were never written: zero, as a file's hole.
			if old := len(f.data); end > cap(f.data) {
				f.data = append(f.data, make([]byte, end-old)...)
			} else {
				f.data = f.data[:end]
				clear(f.data[old:])
			}
		}
		copy(f.data[off:], unsafe.Slice((*byte)(cmem(pBuf)), int(amt)))
		return sqlite3.SQLITE_OK
	})
}

func memTempTruncate(_ *libc.TLS, pFile uintptr, size int64) int32 {
	return withMemTemp(pFile, func(_ *walBatchVFS, f *memTempFile) int32 {
		if size < int64(len(f.data)) {
			f.data = f.data[:size]
		}
		return sqlite3.SQLITE_OK
	})
}

func memTempFileSize(_ *libc.TLS, pFile, pSize uintptr) int32 {
	return withMemTemp(pFile, func(_ *walBatchVFS, f *memTempFile) int32 {
		*(*int64)(cmem(pSize)) = int64(len(f.data))
		return sqlite3.SQLITE_OK
	})
}

// A temporary file is never shared and never outlives a crash: nothing to sync or lock.
func memTempSync(*libc.TLS, uintptr, int32) int32 { return sqlite3.SQLITE_OK }
func memTempLock(*libc.TLS, uintptr, int32) int32 { return sqlite3.SQLITE_OK }

func memTempCheckReservedLock(_ *libc.TLS, _, pResOut uintptr) int32 {
	*(*int32)(cmem(pResOut)) = 0
	return sqlite3.SQLITE_OK
}

func memTempFileControl(*libc.TLS, uintptr, int32, uintptr) int32 { return sqlite3.SQLITE_NOTFOUND }

// memTempSectorSize is unix's default sector size.
func memTempSectorSize(*libc.TLS, uintptr) int32 { return 4096 }

func memTempDeviceCharacteristics(*libc.TLS, uintptr) int32 { return 0 }
