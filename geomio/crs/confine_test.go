//go:build cgo && linux

package crs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// opens watches dir (inotify) and returns a function that gives the
// names of the files in it opened since its last call.
func opens(t *testing.T, dir string) func() []string {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	_, err = unix.InotifyAddWatch(fd, dir, unix.IN_OPEN)
	require.NoError(t, err)
	return func() []string {
		var names []string
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if err != nil || n <= 0 {
				return names
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafePointer(&buf[off]))
				name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
				names = append(names, name)
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}

// TestPROJOpensOnlyItsOwnFiles: a CRS that names a grid or an init file
// by an absolute path, or by a relative one that climbs out of PROJ's
// search paths, makes the worker's PROJ open nothing there (inotify sees
// no open; the files are a real grid and a real init file, which PROJ
// would use); the same grid named as PROJ's own data is still opened and
// used.
func TestPROJOpensOnlyItsOwnFiles(t *testing.T) {
	data := dataDirOf(t)
	grid, err := os.ReadFile(filepath.Join(data, "BETA2007.gsb"))
	if err != nil {
		t.Skip("Debian's BETA2007 grid is not installed here")
	}
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "g.gsb"), grid, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "init"), []byte("<1> +proj=longlat +ellps=bessel +nadgrids="+filepath.Join(outside, "g.gsb")+" <>\n"), 0o644))
	climb := strings.Repeat("../", 12) + strings.TrimPrefix(filepath.Join(outside, "g.gsb"), "/")
	seen := opens(t, outside)
	for _, text := range []string{
		"+proj=longlat +ellps=bessel +nadgrids=" + filepath.Join(outside, "g.gsb") + " +type=crs",
		"+proj=longlat +ellps=bessel +nadgrids=@" + filepath.Join(outside, "g.gsb") + " +type=crs",
		"+proj=longlat +ellps=bessel +nadgrids=" + climb + " +type=crs",
		"+init=" + filepath.Join(outside, "init") + ":1 +type=crs",
		`GEOGCS["hostile",DATUM["d",SPHEROID["Bessel 1841",6377397.155,299.1528128]],PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],EXTENSION["PROJ4","+proj=longlat +ellps=bessel +nadgrids=` + filepath.Join(outside, "g.gsb") + ` +no_defs"]]`,
	} {
		c, err := Resolve(text)
		if err == nil {
			_, _, _ = TransformationIn(c, 10, 50, 11, 51)
		}
		require.Empty(t, seen(), "opened outside PROJ's data by %s (%v)", text, err)
	}

	own := opens(t, data)
	c, err := Resolve("+proj=longlat +ellps=bessel +nadgrids=BETA2007.gsb +type=crs")
	require.NoError(t, err)
	_, _, err = TransformationIn(c, 10, 50, 11, 51)
	require.NoError(t, err)
	require.Contains(t, own(), "BETA2007.gsb", "PROJ's own grid is still read")
}

func unsafePointer(b *byte) unsafe.Pointer { return unsafe.Pointer(b) }
