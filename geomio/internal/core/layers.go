package core

import "sort"

// LayerReader is a Reader of one layer of a multi-layer stream.
type LayerReader interface {
	Reader
	// NextIndex is the Index the layer's next feature would get.
	NextIndex() int64
}

// LayerSource is one layer of a zip: its name (the path in the zip without
// extension) and how to open it with its first feature's Index.
type LayerSource struct {
	Name string
	Open func(base int64) (LayerReader, error)
}

// MultiReader reads several layers (shapefiles, GeoJSON files) as one
// stream, in lexical order of their names, keeping Index counting across
// layers, and runs cleanup on Close.
type MultiReader struct {
	layers  []LayerSource
	Cur     LayerReader
	next    int
	idx     int64
	err     error
	cleanup func() error
	check   func() error // once every layer was read (nil: nothing)
}

func NewMultiReader(layers []LayerSource, cleanup, check func() error) (*MultiReader, error) {
	sort.SliceStable(layers, func(a, b int) bool { return layers[a].Name < layers[b].Name })
	m := &MultiReader{layers: layers, cleanup: cleanup, check: check}
	if err := m.openNext(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *MultiReader) openNext() error {
	if m.Cur != nil {
		m.Cur.Close()
	}
	i := m.next
	m.next++
	cur, err := m.layers[i].Open(m.idx)
	if err != nil {
		return err
	}
	m.Cur = cur
	return nil
}

func (m *MultiReader) Next() bool {
	for m.err == nil {
		if m.Cur.Next() {
			m.idx = m.Cur.NextIndex()
			return true
		}
		if m.err = m.Cur.Err(); m.err != nil {
			return false
		}
		if m.next >= len(m.layers) {
			if m.check != nil {
				m.err, m.check = m.check(), nil
			}
			return false
		}
		m.err = m.openNext()
	}
	return false
}

func (m *MultiReader) Feature() Feature { return m.Cur.Feature() }

func (m *MultiReader) Layer() Layer { return m.Cur.Layer() }

func (m *MultiReader) Err() error { return m.err }

func (m *MultiReader) Close() error {
	var err error
	if m.Cur != nil {
		err = m.Cur.Close()
		m.Cur = nil
	}
	if m.cleanup != nil {
		if cerr := m.cleanup(); err == nil {
			err = cerr
		}
		m.cleanup = nil
	}
	return err
}
