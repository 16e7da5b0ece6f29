package localfs

import (
	"os"
	"syscall"
)

func idOf(st os.FileInfo) (fileID, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{
		dev: uint64(s.Dev), ino: uint64(s.Ino), size: s.Size,
		mtime: s.Mtim.Nano(), ctime: s.Ctim.Nano(),
	}, true
}
