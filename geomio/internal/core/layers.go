package core

// LayerReader is a Reader of one layer of a multi-layer stream.
type LayerReader interface {
	Reader
	// NextIndex is the Index the layer's next feature would get.
	NextIndex() int64
}

// LayerSource is one layer of a multi-layer stream (a zip's file, a KML
// document's folder, a GDAL dataset's table): its name and how to open it
// with its first feature's Index.
type LayerSource struct {
	Name string
	Open func(base int64) (LayerReader, error)
}

// Layers is what NewMultiReader reads.
type Layers struct {
	// Sources are the layers, read in this order.
	Sources []LayerSource
	// First is the Index of the first feature.
	First int64
	// Cleanup runs on Close (nil: nothing): what the layers share (a
	// GDAL dataset, a zip's extraction folder).
	Cleanup func() error
	// Check runs once every layer was read, its error the stream's (nil:
	// nothing).
	Check func() error
	// None is Layer's answer when there is no layer to read.
	None Layer
	// Unread are the layers the stream leaves unread by default
	// (UnreadLayers).
	Unread []string
	// Tables are the tables without geometry of a GDAL dataset opened
	// with Options.Preflight (UnreadTables), and Refusal the error Open
	// would have returned but for Options.Preflight (Refusal).
	Tables  []string
	Refusal error
}

// MultiReader is geomio's one multi-layer iterator: it reads several
// layers as one stream, layer after layer, keeping Index counting across
// them. The zip reader, the KML reader and the GDAL reader are each one.
// It opens the first layer when made, each next one when the previous
// ends, and closes each before opening the next.
type MultiReader struct {
	Layers
	Cur  LayerReader
	next int
	idx  int64
	last Layer // Cur's layer when it was closed
	err  error
	// opened are the layers opened so far, for a preflight
	// (describe.go).
	opened []LayerReader
}

// NewMultiReader opens the first of ls's layers, if any, and returns the
// stream of all.
func NewMultiReader(ls Layers) (*MultiReader, error) {
	m := &MultiReader{Layers: ls, idx: ls.First, last: ls.None}
	if len(ls.Sources) == 0 {
		return m, nil
	}
	if err := m.openNext(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *MultiReader) openNext() error {
	if m.Cur != nil {
		m.last = m.Cur.Layer()
		m.Cur.Close()
		m.Cur = nil
	}
	i := m.next
	m.next++
	cur, err := m.Sources[i].Open(m.idx)
	if err != nil {
		return err
	}
	m.Cur = cur
	m.opened = append(m.opened, cur)
	return nil
}

func (m *MultiReader) Next() bool {
	for m.err == nil {
		if m.Cur != nil && m.Cur.Next() {
			m.idx = m.Cur.NextIndex()
			return true
		}
		if m.Cur != nil {
			if m.err = m.Cur.Err(); m.err != nil {
				return false
			}
		}
		if m.next >= len(m.Sources) {
			if m.Check != nil {
				m.err, m.Check = m.Check(), nil
			}
			return false
		}
		m.err = m.openNext()
	}
	return false
}

// NextIndex is the Index the stream's next feature would get: a stream
// may be one layer source of another.
func (m *MultiReader) NextIndex() int64 { return m.idx }

func (m *MultiReader) Feature() Feature { return m.Cur.Feature() }

// Layer is the current layer's; before the first Next, the first layer's,
// and after the stream ended (or was closed), the last one's.
func (m *MultiReader) Layer() Layer {
	if m.Cur != nil {
		return m.Cur.Layer()
	}
	return m.last
}

func (m *MultiReader) Err() error { return m.err }

func (m *MultiReader) Close() error {
	var err error
	if m.Cur != nil {
		m.last = m.Cur.Layer()
		err = m.Cur.Close()
		m.Cur = nil
	}
	if m.Cleanup != nil {
		if cerr := m.Cleanup(); err == nil {
			err = cerr
		}
		m.Cleanup = nil
	}
	return err
}
