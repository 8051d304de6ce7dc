package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
)

// curve is one line of a scale plot: y against N.
type curve struct {
	name   string
	colour color.RGBA
	points [][2]float64 // (N, y)
}

// scaleCurves are the curves of the scale plot, medians over the pairs of
// each N: the operator's memory in MiB, and the times to Ready in seconds.
func scaleCurves(results []*series) (memory, times []curve) {
	blue, red, green, purple := color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff},
		color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}
	memory = []curve{
		{name: "peak RSS, converging", colour: blue},
		{name: "peak RSS, restarted", colour: red},
		{name: "live heap, converged", colour: green},
	}
	times = []curve{
		{name: "T_ready (operator)", colour: blue},
		{name: "floor-ready", colour: purple},
	}
	add := func(c *curve, n int, v float64) {
		if !math.IsNaN(v) && v > 0 {
			c.points = append(c.points, [2]float64{float64(n), v})
		}
	}
	for _, s := range results {
		add(&memory[0], s.n, s.over(func(r *result) float64 { return float64(r.peakRSS) }).median/(1<<20))
		add(&memory[1], s.n, float64(s.first().basePeakRSS)/(1<<20))
		add(&memory[2], s.n, s.over(func(r *result) float64 { return float64(r.heap) }).median/(1<<20))
		add(&times[0], s.n, s.over(func(r *result) float64 { return r.tReady.Seconds() }).median)
		add(&times[1], s.n, s.over(func(r *result) float64 { return r.floorReady.Seconds() }).median)
	}
	return memory, times
}

// writeScalePlot draws, side by side, the operator's memory and the time
// until every Robot is Ready against N: how each grows with the number of
// Robots.
func writeScalePlot(path string, results []*series) error {
	const w, h = 1200, 520
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	memory, times := scaleCurves(results)
	label(img, 20, 20, "robot-operator at scale: medians over the pairs of each N", color.Black)
	drawPanel(img, image.Rect(0, 30, w/2, h), "operator memory (MiB) against N", memory)
	drawPanel(img, image.Rect(w/2, 30, w, h), "time until every Robot is Ready (s) against N", times)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}

// drawPanel draws curves in r, from 0 to a round bound on both axes.
func drawPanel(img *image.RGBA, r image.Rectangle, title string, curves []curve) {
	const left, right, top, bottom = 70, 20, 30, 50
	var maxX, maxY float64
	for _, c := range curves {
		for _, p := range c.points {
			maxX, maxY = max(maxX, p[0]), max(maxY, p[1])
		}
	}
	maxX, maxY = roundUp(maxX), roundUp(maxY)
	x := func(v float64) int { return r.Min.X + left + int(float64(r.Dx()-left-right)*v/maxX) }
	y := func(v float64) int { return r.Max.Y - bottom - int(float64(r.Dy()-top-bottom)*v/maxY) }
	grey, black := color.RGBA{0xdd, 0xdd, 0xdd, 0xff}, color.Black
	for i := 0; i <= 5; i++ {
		gx, gy := float64(i)*maxX/5, float64(i)*maxY/5
		line(img, x(gx), r.Min.Y+top, x(gx), r.Max.Y-bottom, grey)
		line(img, r.Min.X+left, y(gy), r.Max.X-right, y(gy), grey)
		label(img, x(gx)-12, r.Max.Y-bottom+16, fmt.Sprintf("%g", gx), black)
		label(img, r.Min.X+left-50, y(gy)+4, fmt.Sprintf("%g", gy), black)
	}
	line(img, r.Min.X+left, r.Max.Y-bottom, r.Max.X-right, r.Max.Y-bottom, black)
	line(img, r.Min.X+left, r.Min.Y+top, r.Min.X+left, r.Max.Y-bottom, black)
	label(img, r.Min.X+left, r.Min.Y+top-10, title, black)
	label(img, r.Min.X+r.Dx()/2-10, r.Max.Y-12, "N (Robots)", black)
	for i, c := range curves {
		for j, p := range c.points {
			px, py := x(p[0]), y(p[1])
			for dx := -2; dx <= 2; dx++ {
				for dy := -2; dy <= 2; dy++ {
					img.Set(px+dx, py+dy, c.colour)
				}
			}
			if j > 0 {
				segment(img, x(c.points[j-1][0]), y(c.points[j-1][1]), px, py, c.colour)
			}
		}
		label(img, r.Min.X+left+10, r.Min.Y+top+16*(i+1), c.name, c.colour)
	}
}

// roundUp is the smallest of 1, 2 or 5 times a power of ten at least v.
func roundUp(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// segment draws a straight line from (x0, y0) to (x1, y1).
func segment(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	steps := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= steps; i++ {
		img.Set(x0+(x1-x0)*i/steps, y0+(y1-y0)*i/steps, c)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
