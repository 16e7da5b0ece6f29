//go:build !cgo

package overlay

// Context cannot compute in a build without cgo (no libgeos_c): every
// operation returns ErrUnavailable.
type Context struct{}

// Geom is a geometry (none in this build).
type Geom struct{}

// Prepared is a prepared geometry (none in this build).
type Prepared struct{}

// New returns a Context.
func New() *Context { return &Context{} }

// Close does nothing.
func (c *Context) Close() {}

// Read returns ErrUnavailable.
func (c *Context) Read(wkb []byte) (*Geom, error) { return nil, ErrUnavailable }

// Free does nothing.
func (c *Context) Free(g *Geom) {}

// Prepare returns ErrUnavailable.
func (c *Context) Prepare(g *Geom) (*Prepared, error) { return nil, ErrUnavailable }

// FreePrepared does nothing.
func (c *Context) FreePrepared(p *Prepared) {}

// Covers returns ErrUnavailable.
func (c *Context) Covers(p *Prepared, g *Geom) (bool, error) { return false, ErrUnavailable }

// Intersects returns ErrUnavailable.
func (c *Context) Intersects(p *Prepared, g *Geom) (bool, error) { return false, ErrUnavailable }

// PointOnSurface returns ErrUnavailable.
func (c *Context) PointOnSurface(g *Geom) (*Geom, error) { return nil, ErrUnavailable }

// Intersection returns ErrUnavailable.
func (c *Context) Intersection(a, b *Geom) (*Geom, error) { return nil, ErrUnavailable }

// Difference returns ErrUnavailable.
func (c *Context) Difference(a, b *Geom) (*Geom, error) { return nil, ErrUnavailable }

// Union returns ErrUnavailable.
func (c *Context) Union(gs []*Geom) (*Geom, error) { return nil, ErrUnavailable }

// AppendWKB returns ErrUnavailable.
func (c *Context) AppendWKB(out []byte, g *Geom) ([]byte, error) { return out, ErrUnavailable }

// ClipByRect returns ErrUnavailable.
func (c *Context) ClipByRect(g *Geom, xmin, ymin, xmax, ymax float64) (*Geom, error) {
	return nil, ErrUnavailable
}

// Valid returns ErrUnavailable.
func (c *Context) Valid(g *Geom) (bool, error) { return false, ErrUnavailable }

// XY returns ErrUnavailable.
func (c *Context) XY(g *Geom) (x, y float64, err error) { return 0, 0, ErrUnavailable }
