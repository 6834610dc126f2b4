package log

// Abandon closes the log of a failed log directory (KIP-112) without writing
// anything: no flush, no checkpoint, no producer snapshot and no clean
// shutdown marker, so the next start recovers the partition from its
// segments. Regions still held stay readable until released.
func (l *Log) Abandon() {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if !l.isClosed() {
		l.closeFiles()
	}
}
