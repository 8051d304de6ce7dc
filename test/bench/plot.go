package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"time"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// writePlot draws each Robot's create → Ready latency against when it was
// created, one colour per N (one pair each), so the shape of a run shows at
// a glance.
func writePlot(path string, results []*result) error {
	const w, h, left, right, top, bottom = 960, 540, 70, 20, 40, 50
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)

	var maxX, maxY time.Duration
	for _, r := range results {
		for _, p := range r.points {
			maxX, maxY = max(maxX, p.at), max(maxY, p.latency)
		}
	}
	maxX, maxY = niceCeil(maxX), niceCeil(maxY)
	x := func(d time.Duration) int { return left + int(float64(w-left-right)*float64(d)/float64(maxX)) }
	y := func(d time.Duration) int { return h - bottom - int(float64(h-top-bottom)*float64(d)/float64(maxY)) }

	grey, black := color.RGBA{0xdd, 0xdd, 0xdd, 0xff}, color.Black
	for i := 0; i <= 5; i++ {
		gx, gy := time.Duration(i)*maxX/5, time.Duration(i)*maxY/5
		line(img, x(gx), top, x(gx), h-bottom, grey)
		line(img, left, y(gy), w-right, y(gy), grey)
		label(img, x(gx)-10, h-bottom+16, fmt.Sprintf("%.0fs", gx.Seconds()), black)
		label(img, left-40, y(gy)+4, fmt.Sprintf("%.0fs", gy.Seconds()), black)
	}
	line(img, left, h-bottom, w-right, h-bottom, black)
	line(img, left, top, left, h-bottom, black)
	label(img, left, 20, "robot-operator: each Robot's create -> Ready latency (y) by when it was created (x)", black)
	label(img, w/2-60, h-12, "time since the first create", black)

	palette := []color.RGBA{{0x1f, 0x77, 0xb4, 0xff}, {0xd6, 0x27, 0x28, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0x94, 0x67, 0xbd, 0xff}}
	for i, r := range results {
		c := palette[i%len(palette)]
		for _, p := range r.points {
			px, py := x(p.at), y(p.latency)
			for dx := -1; dx <= 1; dx++ {
				for dy := -1; dy <= 1; dy++ {
					img.Set(px+dx, py+dy, c)
				}
			}
		}
		label(img, w-right-150, top+16*(i+1), fmt.Sprintf("N = %d, pair %d", r.n, r.pair), c)
	}

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}

func niceCeil(d time.Duration) time.Duration {
	s := d.Seconds()
	for _, step := range []float64{5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600} {
		if s <= step {
			return time.Duration(step * float64(time.Second))
		}
	}
	return d
}

func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	for x := min(x0, x1); x <= max(x0, x1); x++ {
		for y := min(y0, y1); y <= max(y0, y1); y++ {
			img.Set(x, y, c)
		}
	}
}

func label(img *image.RGBA, x, y int, s string, c color.Color) {
	d := &font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
