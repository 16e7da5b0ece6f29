package crs

import (
	"fmt"
	"strings"
)

// Grid is a grid file a coordinate operation needs, as PROJ's database
// describes it (proj_coordoperation_get_grid_used).
type Grid struct {
	// ShortName is the file PROJ looks for ("ca_que_mern_cq77na83.tif").
	ShortName string `json:"short_name"`
	// FullName is where PROJ would read it from ("" when not found).
	FullName string `json:"full_name,omitempty"`
	// PackageName is the package that ships it, when PROJ's database
	// names one.
	PackageName string `json:"package_name,omitempty"`
	// URL is where to get it.
	URL string `json:"url,omitempty"`
	// DirectDownload: URL is the file itself, not a page about it.
	DirectDownload bool `json:"direct_download"`
	// OpenLicense: the grid is under an open licence.
	OpenLicense bool `json:"open_license"`
}

// GridOperation is a transformation to WGS 84 more accurate than the one
// PROJ can use now, that it could use once grids that are not installed
// are.
type GridOperation struct {
	Name string `json:"name"`
	// Accuracy is in metres.
	Accuracy float64 `json:"accuracy_m"`
	// Grids are the grids it needs that are missing.
	Grids []Grid `json:"grids"`
	// DataDir is the directory of PROJ's database, where PROJ finds grids.
	DataDir string `json:"data_dir,omitempty"`
	// Area is the name of its area of use: it is better only there.
	Area string `json:"area,omitempty"`
}

// Fix says how to install the missing grids: with projsync into PROJ's
// data directory (projsync's own default is the user's directory, which
// PROJ reads only for the user who ran it: not a service's), or the file
// from its URL into that directory, or the package that ships it; and
// where: geoingest checks the transformation, PostGIS applies it, so
// both need the grid.
func (g *GridOperation) Fix() string {
	dir := g.DataDir
	if dir == "" {
		dir = "PROJ's data directory"
	}
	var parts []string
	for _, gr := range g.Grids {
		s := fmt.Sprintf("install the grid %s into PROJ's data directory", gr.ShortName)
		if g.DataDir != "" {
			s += " " + g.DataDir
		}
		var how []string
		how = append(how, fmt.Sprintf("projsync --target-dir %s --file %s (projsync: Debian package proj-bin)", dir, gr.ShortName))
		if gr.URL != "" {
			if gr.DirectDownload {
				how = append(how, "download "+gr.URL+" into it")
			} else {
				how = append(how, "get it from "+gr.URL)
			}
		}
		if gr.PackageName != "" {
			how = append(how, "install the package "+gr.PackageName)
		}
		s += ": " + strings.Join(how, ", or ")
		if !gr.OpenLicense {
			s += " (its licence is not open: check its terms)"
		}
		parts = append(parts, s)
	}
	s := strings.Join(parts, "; ")
	if g.onCDN() {
		// Debian's proj-data package holds a few grids only; PROJ's own
		// proj-data archive holds every grid of its CDN.
		s += "; or unpack PROJ's proj-data archive (every grid of cdn.proj.org: Debian's proj-data package has only a few) into it"
	}
	return s + ", on the machines that run geoingest and on the database server (PostGIS transforms with its own PROJ)"
}

// String describes the operation and what it needs.
func (g *GridOperation) String() string {
	names := make([]string, len(g.Grids))
	for i, gr := range g.Grids {
		names[i] = gr.ShortName
	}
	where := ""
	if g.Area != "" {
		where = ", in " + strings.TrimSuffix(g.Area, ".")
	}
	if len(names) == 1 {
		return fmt.Sprintf("%q (accurate to %g m%s) needs the grid %s, which is not installed", g.Name, g.Accuracy, where, names[0])
	}
	return fmt.Sprintf("%q (accurate to %g m%s) needs the grids %s, which are not installed", g.Name, g.Accuracy, where, strings.Join(names, ", "))
}

// onCDN reports whether every grid g needs is one of PROJ's CDN, which
// PROJ's proj-data archive holds too.
func (g *GridOperation) onCDN() bool {
	for _, gr := range g.Grids {
		if !strings.HasPrefix(gr.URL, "https://cdn.proj.org/") {
			return false
		}
	}
	return len(g.Grids) > 0
}
