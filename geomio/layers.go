package geomio

import "sort"

// layerReader is a Reader of one layer of a multi-layer stream.
type layerReader interface {
	Reader
	// nextIndex is the Index the layer's next feature would get.
	nextIndex() int64
}

// zipLayer is one layer of a zip: its name (the path in the zip without
// extension) and how to open it with its first feature's Index.
type zipLayer struct {
	name string
	open func(base int64) (layerReader, error)
}

// multiReader reads several layers (shapefiles, GeoJSON files) as one
// stream, in lexical order of their names, keeping Index counting across
// layers, and runs cleanup on Close.
type multiReader struct {
	layers  []zipLayer
	cur     layerReader
	next    int
	idx     int64
	err     error
	cleanup func() error
	check   func() error // once every layer was read (nil: nothing)
}

func newMultiReader(layers []zipLayer, cleanup, check func() error) (*multiReader, error) {
	sort.SliceStable(layers, func(a, b int) bool { return layers[a].name < layers[b].name })
	m := &multiReader{layers: layers, cleanup: cleanup, check: check}
	if err := m.openNext(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *multiReader) openNext() error {
	if m.cur != nil {
		m.cur.Close()
	}
	i := m.next
	m.next++
	cur, err := m.layers[i].open(m.idx)
	if err != nil {
		return err
	}
	m.cur = cur
	return nil
}

func (m *multiReader) Next() bool {
	for m.err == nil {
		if m.cur.Next() {
			m.idx = m.cur.nextIndex()
			return true
		}
		if m.err = m.cur.Err(); m.err != nil {
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

func (m *multiReader) Feature() Feature { return m.cur.Feature() }

func (m *multiReader) Layer() Layer { return m.cur.Layer() }

func (m *multiReader) Err() error { return m.err }

func (m *multiReader) Close() error {
	var err error
	if m.cur != nil {
		err = m.cur.Close()
		m.cur = nil
	}
	if m.cleanup != nil {
		if cerr := m.cleanup(); err == nil {
			err = cerr
		}
		m.cleanup = nil
	}
	return err
}
