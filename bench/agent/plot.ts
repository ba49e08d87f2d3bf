/** The bench:agent plot: cost (× basic's default) against needs satisfied, one panel per price sheet. */
import { Raster, type Rgb } from './png.ts'

export interface PlotPoint {
  readonly label: string
  /** Cost relative to compaction-basic at its default, under the panel's sheet. */
  readonly cost: number
  /** Needs satisfied, percent. */
  readonly success: number
  readonly isDefault: boolean
}

export interface PlotSeries {
  readonly name: string
  readonly color: Rgb
  /** Budget points in curve order (the defaults are drawn as rings, off the curve). */
  readonly points: readonly PlotPoint[]
}

export interface PlotPanel {
  readonly title: string
  readonly series: readonly PlotSeries[]
}

const INK: Rgb = [40, 40, 40]
const GRID: Rgb = [225, 225, 225]
const PANEL_W = 380
const PANEL_H = 330
const MARGIN = { left: 46, right: 14, top: 34, bottom: 40 }

function niceStep(span: number): number {
  const raw = span / 5
  const power = 10 ** Math.floor(Math.log10(raw))
  return [1, 2, 2.5, 5, 10].map(factor => factor * power).find(step => step >= raw) ?? raw
}

export function renderPlot(panels: readonly PlotPanel[], caption: string): Buffer {
  const raster = new Raster(PANEL_W * panels.length, PANEL_H + 30)
  const all = panels.flatMap(panel => panel.series.flatMap(series => series.points))
  const yLow = Math.max(0, Math.floor((Math.min(...all.map(point => point.success)) - 5) / 10) * 10)
  for (const [index, panel] of panels.entries()) {
    const left = index * PANEL_W + MARGIN.left
    const right = (index + 1) * PANEL_W - MARGIN.right
    const top = MARGIN.top
    const bottom = PANEL_H - MARGIN.bottom
    const points = panel.series.flatMap(series => series.points)
    const xMax = Math.max(1.1, ...points.map(point => point.cost)) * 1.08
    const xStep = niceStep(xMax)
    const x = (value: number): number => left + (value / xMax) * (right - left)
    const y = (value: number): number => bottom - ((value - yLow) / (102 - yLow)) * (bottom - top)
    for (let tick = 0; tick <= xMax; tick += xStep) {
      raster.line(x(tick), top, x(tick), bottom, GRID)
      raster.text(x(tick) - 8, bottom + 6, Number(tick.toFixed(2)).toString(), INK)
    }
    for (let tick = yLow; tick <= 100; tick += 10) {
      raster.line(left, y(tick), right, y(tick), GRID)
      raster.text(left - 30, y(tick) - 3, `${tick}%`, INK)
    }
    raster.line(left, bottom, right, bottom, INK)
    raster.line(left, top, left, bottom, INK)
    raster.text(left, 10, panel.title, INK)
    raster.text(left + 40, bottom + 20, 'cost (x basic default)', INK)
    for (const series of panel.series) {
      const curve = series.points.filter(point => !point.isDefault)
      for (let point = 1; point < curve.length; point += 1) {
        raster.line(x(curve[point - 1]!.cost), y(curve[point - 1]!.success), x(curve[point]!.cost), y(curve[point]!.success), series.color, 2)
      }
      for (const point of series.points) {
        if (point.isDefault) {
          raster.dot(x(point.cost), y(point.success), 7, series.color)
          raster.dot(x(point.cost), y(point.success), 4, [255, 255, 255])
        } else raster.dot(x(point.cost), y(point.success), 4, series.color)
        raster.text(x(point.cost) + 7, y(point.success) + (point.isDefault ? 6 : -10), point.label, series.color)
      }
    }
    // legend
    panel.series.forEach((series, position) => {
      raster.rect(right - 110, bottom - 34 + position * 14, 10, 7, series.color)
      raster.text(right - 96, bottom - 34 + position * 14, series.name, INK)
    })
  }
  raster.text(MARGIN.left, PANEL_H + 10, caption, INK)
  return raster.png()
}
