package main

import (
	"encoding/csv"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strconv"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// writeCSV writes one line per month.
func writeCSV(path string, rs []month) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	keys := []string{"tile/geoingest/warm", "tile/one/warm", "tile/geoingest/new", "tile/one/new",
		"join/geoingest/warm", "join/one/warm", "join/geoingest/new", "join/one/new"}
	head := []string{"month", "jobs", "deliveries", "retries", "jobs_per_s", "probe_wall_s", "probe_write_s", "probe_refresh_s"}
	for _, k := range keys {
		head = append(head, k+"/p50_ms", k+"/p99_ms")
	}
	head = append(head, "during_p50_ms", "during_p99_ms", "report_s", "verify_s", "verify_since_s", "pruned_jobs",
		"db_bytes", "dead_tuples", "live_tuples", "partitions", "relations", "current_rows", "ledger_jobs",
		"settle_s", "storage_bloat", "shared_bloat",
		"full_wall_s", "full_write_s", "features", "changed", "store_bytes", "history_bytes", "changelog_bytes", "twin_history_bytes")
	for _, l := range []string{"keyed", "unkeyed"} {
		for _, k := range kinds {
			head = append(head, l+"/"+k+"/reported", l+"/"+k+"/correct", l+"/"+k+"/truth")
		}
	}
	_ = w.Write(head)
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	for _, r := range rs {
		rec := []string{strconv.Itoa(r.Month), strconv.Itoa(r.Jobs), strconv.Itoa(r.Deliveries), fmt.Sprint(r.Retries), g(r.JobsPerSec),
			g(r.ProbeWall), g(r.ProbeWrite), g(r.ProbeRefresh)}
		for _, k := range keys {
			rec = append(rec, g(r.Q[k].P50), g(r.Q[k].P99))
		}
		rec = append(rec, g(r.DuringP50), g(r.DuringP99), g(r.Report), g(r.Verify), g(r.VerifySince),
			fmt.Sprint(r.PruneJobs), fmt.Sprint(r.DBBytes), fmt.Sprint(r.Dead), fmt.Sprint(r.Live),
			fmt.Sprint(r.Partitions), fmt.Sprint(r.Relations), fmt.Sprint(r.CurrentRows), fmt.Sprint(r.LedgerJobs),
			g(r.Settle), g(r.Bloat), g(r.SharedBloat),
			g(r.FullWall), g(r.FullWrite), fmt.Sprint(r.Features), fmt.Sprint(r.Changed),
			fmt.Sprint(r.StoreBytes), fmt.Sprint(r.HistoryBytes), fmt.Sprint(r.ChangelogBytes), fmt.Sprint(r.TwinHistoryBytes))
		for _, t := range []tally{r.Keyed, r.Unkeyed} {
			for _, k := range kinds {
				rec = append(rec, fmt.Sprint(t.Reported[k]), fmt.Sprint(t.Correct[k]), fmt.Sprint(t.Truth[k]))
			}
		}
		_ = w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// series is one line of a panel.
type series struct {
	name   string
	c      color.RGBA
	dashed bool
	y      []float64
}

// text writes s at (x, y) (the baseline) in basicfont's 7x13 face.
func text(img *image.RGBA, x, y int, s string, c color.RGBA) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// writePlot draws two panels against the month (x): left, the tile
// query's p99 in ms (geoingest and the one-table copy, warm and on a new
// connection); right, the probe job's wall time, write-gate time and
// report refresh in s. Each panel has labelled axes: the y axis from 0 to
// a round value above the panel's maximum (yScale), with a labelled tick
// and a grey line at each step, its unit above it; the x axis with the
// months and "month". Titles and a legend are written on it.
func writePlot(path string, rs []month) error {
	const w, h, pw = 1010, 440, 440
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	col := func(f func(month) float64) []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = f(r)
		}
		return out
	}
	red, blue := color.RGBA{220, 30, 30, 255}, color.RGBA{30, 60, 220, 255}
	orange, cyan := color.RGBA{240, 150, 0, 255}, color.RGBA{0, 180, 200, 255}
	black, green := color.RGBA{0, 0, 0, 255}, color.RGBA{0, 150, 0, 255}
	purple := color.RGBA{140, 60, 170, 255}
	panel(img, image.Rect(60, 40, 60+pw, h-90), "tile query (z14-z16) p99", "ms", []series{
		{"geoingest, warm", red, false, col(func(r month) float64 { return r.Q["tile/geoingest/warm"].P99 })},
		{"one table, warm", blue, false, col(func(r month) float64 { return r.Q["tile/one/warm"].P99 })},
		{"geoingest, new connection", orange, true, col(func(r month) float64 { return r.Q["tile/geoingest/new"].P99 })},
		{"one table, new connection", cyan, true, col(func(r month) float64 { return r.Q["tile/one/new"].P99 })},
	})
	panel(img, image.Rect(w-20-pw, 40, w-20, h-90), "probe job (25k parcels)", "s", []series{
		{"wall time", black, false, col(func(r month) float64 { return r.ProbeWall })},
		{"write gate", purple, false, col(func(r month) float64 { return r.ProbeWrite })},
		{"report refresh", green, false, col(func(r month) float64 { return r.ProbeRefresh })},
	})
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// yScale returns the top of a y axis that starts at 0 and holds max, and
// the step between its ticks: a step of 1, 2, 2.5 or 5 times a power of
// ten, at most five of them, the top the first step at or above max.
func yScale(max float64) (top, step float64) {
	if max <= 0 {
		return 1, 0.2
	}
	mag := math.Pow(10, math.Floor(math.Log10(max/5)))
	for _, f := range []float64{1, 2, 2.5, 5, 10} {
		step = f * mag
		if step*5 >= max*(1-1e-9) {
			break
		}
	}
	return step * math.Ceil(max/step-1e-9), step
}

// tickLabel writes v with as many decimals as step needs.
func tickLabel(v, step float64) string {
	d := 0
	for d < 3 && math.Abs(step*math.Pow(10, float64(d))-math.Round(step*math.Pow(10, float64(d)))) > 1e-9 {
		d++
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

func panel(img *image.RGBA, r image.Rectangle, title, unit string, ss []series) {
	peak := 0.0
	n := 0
	for _, s := range ss {
		for _, v := range s.y {
			peak = math.Max(peak, v)
		}
		if len(s.y) > n {
			n = len(s.y)
		}
	}
	max, step := yScale(peak)
	grey := color.RGBA{220, 220, 220, 255}
	axis := color.RGBA{0, 0, 0, 255}
	for k := 0; float64(k)*step <= max*(1+1e-9); k++ {
		v := float64(k) * step
		y := r.Max.Y - int(v/max*float64(r.Dy()))
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, grey)
		}
		for x := r.Min.X - 4; x < r.Min.X; x++ {
			img.SetRGBA(x, y, axis)
		}
		l := tickLabel(v, step)
		text(img, r.Min.X-6-7*len(l), y+4, l, axis)
	}
	for i := 0; i < n; i++ {
		x := r.Min.X + xAt(i, n, r.Dx())
		for y := r.Min.Y; y < r.Max.Y; y++ {
			if y%4 == 0 {
				img.SetRGBA(x, y, grey)
			}
		}
	}
	text(img, r.Min.X, r.Min.Y-22, title+", "+unit, axis)
	text(img, r.Min.X-6-7*len(unit), r.Min.Y-10, unit, axis)
	for i := 0; i < n; i++ {
		text(img, r.Min.X+xAt(i, n, r.Dx())-3, r.Max.Y+16, strconv.Itoa(i), axis)
	}
	text(img, r.Max.X-40, r.Max.Y+30, "month", axis)
	for k, s := range ss {
		y := r.Max.Y + 48 + (k/2)*16
		x := r.Min.X + (k%2)*(r.Dx()/2)
		line(img, x, y-4, x+24, y-4, s.c, s.dashed)
		text(img, x+30, y, s.name, axis)
	}
	for x := r.Min.X; x <= r.Max.X; x++ {
		img.SetRGBA(x, r.Max.Y, axis)
	}
	for y := r.Min.Y; y <= r.Max.Y; y++ {
		img.SetRGBA(r.Min.X, y, axis)
	}
	for _, s := range ss {
		for i := 1; i < len(s.y); i++ {
			x0, x1 := r.Min.X+xAt(i-1, n, r.Dx()), r.Min.X+xAt(i, n, r.Dx())
			y0 := r.Max.Y - int(s.y[i-1]/max*float64(r.Dy()))
			y1 := r.Max.Y - int(s.y[i]/max*float64(r.Dy()))
			line(img, x0, y0, x1, y1, s.c, s.dashed)
		}
		for i, v := range s.y {
			x, y := r.Min.X+xAt(i, n, r.Dx()), r.Max.Y-int(v/max*float64(r.Dy()))
			for dx := -2; dx <= 2; dx++ {
				for dy := -2; dy <= 2; dy++ {
					img.SetRGBA(x+dx, y+dy, s.c)
				}
			}
		}
	}
}

func xAt(i, n, width int) int {
	if n <= 1 {
		return width / 2
	}
	return i * (width - 10) / (n - 1)
}

// line draws a 2-pixel line (dashed: every other 6 pixels).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA, dashed bool) {
	steps := int(math.Max(math.Abs(float64(x1-x0)), math.Abs(float64(y1-y0))))
	if steps == 0 {
		steps = 1
	}
	for k := 0; k <= steps; k++ {
		if dashed && (k/6)%2 == 1 {
			continue
		}
		x := x0 + (x1-x0)*k/steps
		y := y0 + (y1-y0)*k/steps
		img.SetRGBA(x, y, c)
		img.SetRGBA(x, y+1, c)
	}
}

// readCSV reads what writeCSV wrote (for -replot).
func readCSV(path string) ([]month, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) < 1 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	var out []month
	for _, rec := range recs[1:] {
		num := func(h string) float64 {
			i, ok := col[h]
			if !ok || i >= len(rec) {
				return 0
			}
			v, _ := strconv.ParseFloat(rec[i], 64)
			return v
		}
		m := month{Month: int(num("month")), ProbeWall: num("probe_wall_s"), ProbeWrite: num("probe_write_s"),
			ProbeRefresh: num("probe_refresh_s"), Q: map[string]stats{}}
		for _, k := range []string{"tile/geoingest/warm", "tile/one/warm", "tile/geoingest/new", "tile/one/new"} {
			m.Q[k] = stats{num(k + "/p50_ms"), num(k + "/p99_ms")}
		}
		out = append(out, m)
	}
	return out, nil
}
