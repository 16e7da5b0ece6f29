package core

import "testing"

func TestSkipSetAddAllBut(t *testing.T) {
	var all, s SkipSet
	for _, i := range []int64{0, 3, 63, 64, 65, 200, 1000} {
		all.Add(i)
	}
	s.Add(5)
	s.Add(200)
	// 64 and 1000 left out; 7 (not in all) and -1 are ignored; 200 was in s.
	if !s.AddAllBut(&all, []int64{64, 1000, 7, -1, 200}) {
		t.Fatal("refused before the reader began")
	}
	want := map[int64]bool{0: true, 3: true, 5: true, 63: true, 65: true, 200: true}
	for i := int64(0); i < 1100; i++ {
		if s.Has(i) != want[i] {
			t.Errorf("Has(%d) = %v", i, s.Has(i))
		}
	}
	if s.Len() != int64(len(want)) {
		t.Errorf("Len = %d, want %d", s.Len(), len(want))
	}
	if all.Len() != 7 || !all.Has(64) {
		t.Error("all was changed")
	}
	s.Start()
	if s.AddAllBut(&all, nil) || s.Has(64) {
		t.Error("filled after the reader began")
	}
}
