// memgate page script: draws each device's chart from the page's JSON block.
// No library, no network, no eval; names are written as text only.
'use strict';
(function () {
  var NS = 'http://www.w3.org/2000/svg';
  var W = 960, H = 360, L = 78, R = 18, T = 34, B = 42;
  var PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f',
    '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
  var NAMES = {'allocated-peak': 'allocated peak', 'dynamic-peak': 'dynamic peak',
    'reserved-peak': 'reserved peak', 'oom': 'OOM'};
  var UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  // What no reader would see for what it is (control characters, bidi
  // controls, line and paragraph separators) is shown as its escape, as
  // memgate's other reports write it.
  var HIDDEN = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;
  var SHORT = {'\t': '\\t', '\n': '\\n', '\r': '\\r'};
  function shown(s) {
    return s.replace(HIDDEN, function (c) {
      return SHORT[c] || '\\u{' + c.charCodeAt(0).toString(16) + '}';
    });
  }
  var data = JSON.parse(document.getElementById('memgate-data').textContent,
    function (key, v) { return typeof v === 'string' ? shown(v) : v; });

  function svg(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function tag(name, text, parent, cls) {
    var e = document.createElement(name);
    if (text !== undefined && text !== null) { e.textContent = text; }
    if (cls) { e.className = cls; }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function bytes(b) {
    var k = 0, v = b;
    while (v >= 1024 && k < UNITS.length - 1) { v /= 1024; k++; }
    return (k === 0 ? String(v) : v.toFixed(2).replace(/\.?0+$/, '')) + ' ' + UNITS[k];
  }
  function exact(b) { return bytes(b) + ' (' + b + ' bytes)'; }
  function signed(b) { return (b < 0 ? '-' : '') + bytes(Math.abs(b)); }
  function seconds(x) { return '+' + (x / 1e6).toFixed(3) + ' s'; }
  // A path's prefix before site-packages/ (or dist-packages/) folded.
  var PACKAGES = /(^|[ (])[^ (]*?[\/\\]((?:site|dist)-packages[\/\\])/g;
  function fold(s) { return s.replace(PACKAGES, '$1…/$2'); }
  // Text cut to n characters with an ellipsis.
  function cut(s, n) { return s.length <= n ? s : n < 2 ? '' : s.slice(0, n - 1) + '…'; }
  // Text element t holding as much of s as fits in `room` user units, cut
  // with an ellipsis (measured, not guessed); false when not even three
  // characters fit.
  function fitText(t, s, room) {
    t.textContent = s;
    var w = t.getComputedTextLength();
    if (w <= room) { return true; }
    var n = Math.floor(s.length * room / Math.max(w, 1));
    for (; n >= 3; n--) {
      t.textContent = cut(s, n);
      if (t.getComputedTextLength() <= room) { return true; }
    }
    return false;
  }
  // Whether boxes a and b ([x0, y0, x1, y1]) overlap.
  function overlaps(a, b) { return a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]; }
  // Ticks at 1, 2 or 5 times a power of ten (of the byte unit for y).
  function niceStep(span, n) {
    var raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }
  function byteTicks(max) {
    var k = 0;
    while (max / Math.pow(1024, k) >= 1024 && k < UNITS.length - 1) { k++; }
    var u = Math.pow(1024, k), step = niceStep(max / u, 5) * u, out = [];
    for (var v = 0; v <= max * 1.0001; v += step) { out.push(v); }
    return out;
  }
  // The first index whose x is >= v (binary search; x is sorted).
  function lowerBound(xs, v) {
    var lo = 0, hi = xs.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (xs[mid] < v) { lo = mid + 1; } else { hi = mid; } }
    return lo;
  }
  function total(d, i) {
    var s = 0;
    for (var c = 0; c < d.cats.length; c++) { s += d.cats[c].bytes[i]; }
    return s;
  }
  function plusOne(e) { return e + 1; }

  function Chart(host, d, id) {
    this.host = host; this.d = d; this.id = id;
    d.ex = d.entry.map(plusOne);
    var want = data.x === 'entries' ? 'entry' : data.x === 'time' ? 's' : d.auto;
    this.sel = -1;
    // Nested or overlapping phases go on separate rows (at most three).
    var ends = [];
    d.bands.filter(function (b) { return !b.iteration; })
      .sort(function (a, b) { return a.e0 - b.e0 || b.e1 - a.e1; }).forEach(function (b) {
      var row = 0;
      while (row < ends.length && ends[row] > b.e0) { row++; }
      b.row = Math.min(row, 2);
      ends[b.row] = Math.max(ends[b.row] || 0, b.e1);
    });
    this.build();
    this.setMode(d.axis === 's' ? want : 'entry', true);
    // Open on the allocated peak's moment, its largest stacks listed.
    var peak = d.marks.filter(function (m) { return m.figure === 'allocated-peak'; })[0];
    if (peak) { this.select(peak.moment, true); } else { this.draw(); }
  }

  // The x axis: 's' (microseconds since the first timed entry) or 'entry'
  // (entries applied); every x the chart draws is read through here.
  Chart.prototype.setMode = function (mode, first) {
    var d = this.d, e = mode === 'entry';
    this.mode = mode;
    this.xs = e ? d.ex : d.x;
    this.bx = function (b) { return e ? [b.e0, b.e1] : [b.x0, b.x1]; };
    this.mx = function (m) { return e ? m.e : m.x; };
    this.ox = function (m) { return e ? m.entry + 1 : m.x; };
    this.blx = d.baseline ? (e ? d.baseline.e : d.baseline.x) : null;
    this.fx = d.fine ? (e ? d.fine.e : d.fine.x) : null;
    var last = this.xs.length ? this.xs[this.xs.length - 1] : 1;
    if (this.blx && this.blx.length) { last = Math.max(last, this.blx[this.blx.length - 1]); }
    this.full = [0, Math.max(last, 1)];
    this.dom = this.full.slice();
    if (d.window) {
      // `--window`: open zoomed to it (a twentieth of its width around).
      var w = this.bx(d.window), pad = Math.max((w[1] - w[0]) / 20, 1);
      this.dom = [Math.max(this.full[0], w[0] - pad), Math.min(this.full[1], w[1] + pad)];
      if (this.dom[1] <= this.dom[0]) { this.dom = this.full.slice(); }
    }
    this.svg.setAttribute('data-axis', mode);
    for (var k = 0; k < this.modeButtons.length; k++) {
      var b = this.modeButtons[k];
      b.setAttribute('aria-pressed', String(b.getAttribute('data-x') === mode));
    }
    if (!first) { this.draw(); }
  };
  // Zoomed in far enough for the finer level to add detail.
  Chart.prototype.fineOn = function () {
    return !!this.fx && this.dom[1] - this.dom[0] < (this.full[1] - this.full[0]) * 0.75;
  };
  Chart.prototype.xText = function (x) {
    return this.mode === 's' ? seconds(x) : 'entry ' + x;
  };

  Chart.prototype.sx = function (x) {
    return L + (x - this.dom[0]) / (this.dom[1] - this.dom[0]) * (W - L - R);
  };
  Chart.prototype.ix = function (px) {
    return this.dom[0] + (px - L) / (W - L - R) * (this.dom[1] - this.dom[0]);
  };
  Chart.prototype.sy = function (v) { return H - B - v / this.ymax * (H - T - B); };

  Chart.prototype.build = function () {
    var self = this, d = this.d;
    this.svg = svg('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img', tabindex: '0',
      'aria-label': 'allocated bytes by category over ' + (d.axis === 's' ? 'time' : 'trace entries') +
        '; arrow keys step through the moments and list the allocations live at each'}, this.host);
    var tools = tag('div', null, this.host, 'tools');
    var reset = tag('button', 'Reset zoom', tools);
    reset.type = 'button';
    var axes = tag('span', 'x axis:', tools, 'axes');
    this.modeButtons = [];
    [['entry', 'entries'], ['s', 'time']].forEach(function (m) {
      var b = tag('button', m[1], axes);
      b.type = 'button';
      b.setAttribute('data-x', m[0]);
      if (m[0] === 's' && d.axis !== 's') {
        b.disabled = true;
        b.title = 'this trace has no usable time_us';
      }
      b.addEventListener('click', function () { self.setMode(m[0]); });
      self.modeButtons.push(b);
    });
    if (d.rise !== undefined && d.rise !== null) {
      var pct = function (r) { return (r * 100).toPrecision(2) + '%'; };
      axes.title = 'auto: ' + (d.auto === 'entry' ? 'entries' : 'time') + ': the rise to the ' +
        'allocated peak takes ' + pct(d.rise) + ' of the time axis and ' + pct(d.rise_entries || 0) +
        ' of the entries axis (entries when under 1% of the time axis, or under 5% of it and ' +
        'wider on entries)';
    }
    tag('span', 'wheel or drag to zoom, shift+wheel to pan, click or arrow keys to pick a moment', tools);
    this.readout = tag('div', '', this.host, 'readout');
    this.readout.setAttribute('aria-live', 'polite');
    var legend = tag('div', null, this.host, 'legend');
    // Bottom layer first, as stacked.
    d.cats.forEach(function (c) {
      var s = tag('span', null, legend, 'cat');
      s.title = c.name + (c.empty ? ': 0 B at every moment' : '');
      var sw = svg('svg', {'class': 'sw', viewBox: '0 0 10 10', 'aria-hidden': 'true'}, s);
      svg('rect', {width: 10, height: 10, fill: c.color}, sw);
      tag('span', c.name, s, 'name');
      if (c.empty) { tag('span', '0 B', s, 'zero'); }
    });
    tag('span', (d.fine ? 'zoomed in, a thin line draws the allocated total in finer detail · ' : '') +
      'reserved: dashed line · markers: ◆ allocated peak, ■ dynamic peak, ▲ reserved peak, ✕ OOM' +
      (d.baseline ? ' · baseline: grey line allocated, dotted reserved' : ''), legend, 'keys');
    this.table = tag('div', null, this.host);
    reset.addEventListener('click', function () { self.dom = self.full.slice(); self.draw(); });
    this.svg.addEventListener('mousemove', function (e) { self.onMove(e); });
    this.svg.addEventListener('mouseleave', function () { self.hoverLine.setAttribute('visibility', 'hidden'); });
    this.svg.addEventListener('wheel', function (e) { self.onWheel(e); }, {passive: false});
    this.svg.addEventListener('mousedown', function (e) { self.onDown(e); });
    window.addEventListener('mouseup', function (e) { self.onUp(e); });
    this.svg.addEventListener('keydown', function (e) { self.onKey(e); });
  };

  Chart.prototype.px = function (e) {
    var box = this.svg.getBoundingClientRect();
    return (e.clientX - box.left) * W / box.width;
  };

  Chart.prototype.draw = function () {
    var self = this, d = this.d, s = this.svg, xs = this.xs;
    while (s.firstChild) { s.removeChild(s.firstChild); }
    s.setAttribute('data-domain', this.dom[0] + ' ' + this.dom[1]);
    var i0 = Math.max(0, lowerBound(xs, this.dom[0]) - 1);
    var i1 = Math.min(xs.length, lowerBound(xs, this.dom[1]) + 1);
    var ymax = 1;
    for (var i = i0; i < i1; i++) { ymax = Math.max(ymax, total(d, i), d.reserved[i]); }
    d.marks.forEach(function (m) {
      var x = self.mx(m);
      if (x >= self.dom[0] && x <= self.dom[1]) { ymax = Math.max(ymax, m.y); }
    });
    var bl = d.baseline, blx = this.blx;
    if (bl) {
      var b0 = Math.max(0, lowerBound(blx, this.dom[0]) - 1), b1 = Math.min(blx.length, lowerBound(blx, this.dom[1]) + 1);
      for (var bi = b0; bi < b1; bi++) { ymax = Math.max(ymax, bl.allocated[bi], bl.reserved[bi]); }
    }
    // A budget within half again of the data widens the scale to show it;
    // one far above is drawn at the top edge and says so.
    (d.budgets || []).forEach(function (b) {
      if (b.bytes <= ymax * 1.5) { ymax = Math.max(ymax, b.bytes); }
    });
    var ticks = byteTicks(ymax * 1.05);
    this.ymax = Math.max(ticks[ticks.length - 1], ymax * 1.05);
    var clip = 'clip' + this.id;
    var cp = svg('clipPath', {id: clip}, svg('defs', {}, s));
    svg('rect', {x: L, y: T - 32, width: W - L - R, height: H - B - T + 32}, cp);
    var axis = svg('g', {'class': 'axis'}, s);
    var plot = svg('g', {'clip-path': 'url(#' + clip + ')'}, s);
    this.drawBands(plot);
    // Grid lines over the bands, under the curves.
    var grid = svg('g', {'class': 'gridlines'}, plot);
    ticks.forEach(function (v) {
      var y = self.sy(v);
      svg('line', {'class': 'grid', x1: L, x2: W - R, y1: y, y2: y}, grid);
      svg('text', {x: L - 6, y: y + 4, 'text-anchor': 'end'}, axis).textContent = bytes(v);
    });
    var span = this.dom[1] - this.dom[0], timed = this.mode === 's';
    var step = niceStep(span / (timed ? 1e6 : 1), 8) * (timed ? 1e6 : 1);
    if (!timed) { step = Math.max(1, Math.round(step)); }
    for (var v = Math.ceil(this.dom[0] / step) * step; v <= this.dom[1]; v += step) {
      var x = this.sx(v);
      svg('line', {'class': 'grid', x1: x, x2: x, y1: T, y2: H - B}, grid);
      svg('line', {x1: x, x2: x, y1: H - B, y2: H - B + 5}, axis);
      svg('text', {x: x, y: H - B + 17, 'text-anchor': 'middle'}, axis).textContent =
        timed ? +(v / 1e6).toPrecision(6) + ' s' : String(v);
    }
    svg('path', {d: 'M' + L + ',' + T + 'V' + (H - B) + 'H' + (W - R), fill: 'none'}, axis);
    svg('text', {x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle'}, axis).textContent =
      timed ? 'seconds since the first timed entry'
        : 'trace entries applied (allocation order)' + (d.axis === 's' ? '' : '; no usable time_us');
    this.drawAreas(plot, i0, i1);
    this.drawBudgets(s);
    // Markers are not clipped: one at the plot's edge shows whole.
    var boxes = this.drawMarks(svg('g', {'class': 'marks'}, s));
    this.drawBudgetLabels(svg('g', {'class': 'budget-labels'}, s), boxes);
    this.hoverLine = svg('line', {'class': 'hover', y1: T, y2: H - B, visibility: 'hidden'}, s);
    this.brush = svg('rect', {'class': 'brush', y: T, height: H - B - T, width: 0, visibility: 'hidden'}, s);
    if (this.sel >= 0) { this.showSelected(); }
  };

  Chart.prototype.budgetY = function (b) { return b.bytes > this.ymax ? T : this.sy(b.bytes); };

  // The budget lines, under the markers.
  Chart.prototype.drawBudgets = function (g) {
    var self = this;
    (this.d.budgets || []).forEach(function (b) {
      var y = self.budgetY(b);
      var grp = svg('g', {'class': 'budget', 'data-check': b.check, 'data-bytes': String(b.bytes),
        'data-headroom': String(b.headroom)}, g);
      svg('line', {x1: L, x2: W - R, y1: y, y2: y}, grp);
    });
  };

  // Each budget's label, over everything else, on a white ground: placed
  // beside its line where it covers no marker, no other label and no other
  // budget line (right end above the line, below it, then the left end,
  // then the middle); `boxes`: the markers' boxes.
  Chart.prototype.drawBudgetLabels = function (g, boxes) {
    var self = this, budgets = this.d.budgets || [], taken = boxes.slice();
    var lines = budgets.map(function (b) { return self.budgetY(b); });
    budgets.forEach(function (b, k) {
      var above = b.bytes > self.ymax, y = lines[k];
      var label = (above ? '↑ ' : '') + 'budget ' + b.check + ' ' + bytes(b.bytes) + ' · ' +
        (b.headroom >= 0 ? 'headroom ' + bytes(b.headroom) : 'over by ' + bytes(-b.headroom)) +
        (above ? ' (above the chart)' : '');
      var grp = svg('g', {'class': 'budget-label', 'data-check': b.check}, g);
      var ground = svg('rect', {'class': 'ground'}, grp);
      var t = svg('text', {}, grp);
      t.textContent = label;
      svg('title', {}, grp).textContent = label + ' (' + b.bytes + ' bytes, headroom ' +
        signed(b.headroom) + ')';
      var w = t.getComputedTextLength(), h = 11;
      var xs = [W - R - 4 - w, L + 4, (L + W - R - w) / 2];
      var ys = [y - 4, y + h + 2];
      var free = function (box) {
        return box[1] >= 0 && box[3] <= H - B &&
          !taken.some(function (o) { return overlaps(box, o); }) &&
          !lines.some(function (ly, j) { return j !== k && ly > box[1] && ly < box[3]; });
      };
      var best = null;
      xs.forEach(function (x) {
        ys.forEach(function (base) {
          var box = [x - 2, base - h + 1, x + w + 2, base + 3];
          if (!best && free(box)) { best = [x, base, box]; }
        });
      });
      if (!best) { best = [xs[0], ys[0], [xs[0] - 2, ys[0] - h + 1, xs[0] + w + 2, ys[0] + 3]]; }
      t.setAttribute('x', best[0]);
      t.setAttribute('y', best[1]);
      var box = best[2];
      ground.setAttribute('x', box[0]);
      ground.setAttribute('y', box[1]);
      ground.setAttribute('width', box[2] - box[0]);
      ground.setAttribute('height', box[3] - box[1]);
      taken.push(box);
    });
  };

  // A phase's colour, by its name: the palette, then hues 47° apart (a
  // name keeps its colour on every span; no two names share one).
  Chart.prototype.phaseColour = function (name) {
    if (!this.phaseNames) {
      var names = this.phaseNames = Object.create(null), n = 0;
      this.d.bands.forEach(function (b) {
        if (!b.iteration && !(b.name in names)) { names[b.name] = n++; }
      });
    }
    var k = this.phaseNames[name];
    return k < PALETTE.length ? PALETTE[k] : 'hsl(' + (k * 47 % 360) + ',55%,' + [62, 45, 75, 35][Math.floor(k / 360) % 4] + '%)';
  };

  Chart.prototype.drawBands = function (g) {
    var self = this, d = this.d, spans = [];
    d.bands.forEach(function (b) {
      var r = self.bx(b);
      if (r[1] < self.dom[0] || r[0] > self.dom[1]) { return; }
      var x0 = Math.max(self.sx(r[0]), L - 1), x1 = Math.min(Math.max(self.sx(r[1]), x0 + 1), W - R + 1);
      var band = svg('g', {'class': 'band'}, g);
      if (b.iteration) {
        svg('rect', {x: x0, y: T, width: x1 - x0, height: H - B - T,
          fill: (Number(b.name) % 2) ? '#f4f4f4' : '#fafafa'}, band);
        svg('title', {}, band).textContent = 'iteration ' + b.name;
      } else {
        var y = T - 30 + 10 * b.row;
        svg('rect', {x: x0, y: y, width: x1 - x0, height: 9, fill: self.phaseColour(b.name),
          'fill-opacity': 0.55}, band);
        svg('title', {}, band).textContent = 'phase ' + b.name;
        spans.push([b, x0, x1, y]);
      }
    });
    this.drawBandLabels(g, spans);
    if (d.window) {
      var w = this.bx(d.window), wx0 = this.sx(w[0]), wx1 = Math.max(this.sx(w[1]), wx0 + 1);
      var wr = svg('rect', {'class': 'windowspan', x: wx0, y: T, width: wx1 - wx0, height: H - B - T}, g);
      svg('title', {}, wr).textContent = 'window ' + d.window.name;
    }
  };

  // The phase names, over every band (no later span covers one): each
  // inside its band, after the previous label of its row (a row holds
  // overlapping spans past three), cut with an ellipsis, left out where
  // three characters do not fit. `spans`: [band, x0, x1, y] drawn.
  Chart.prototype.drawBandLabels = function (g, spans) {
    var ends = [];
    spans.forEach(function (s) {
      var b = s[0], from = Math.max(s[1] + 2, (ends[b.row] || -Infinity) + 4);
      var room = Math.min(s[2], W - R) - 2 - from;
      if (room < 12) { return; }
      var label = svg('g', {'class': 'band label'}, g);
      svg('title', {}, label).textContent = 'phase ' + b.name;
      var t = svg('text', {x: from, y: s[3] + 8}, label);
      if (fitText(t, b.name, room)) { ends[b.row] = from + t.getComputedTextLength(); }
      else { g.removeChild(label); }
    });
  };

  Chart.prototype.drawAreas = function (g, i0, i1) {
    var self = this, d = this.d, xs = this.xs, below = [];
    for (var i = i0; i < i1; i++) { below.push(0); }
    d.cats.forEach(function (c) {
      var top = [], pts = [];
      for (var i = i0; i < i1; i++) {
        top.push(below[i - i0] + c.bytes[i]);
        pts.push(self.sx(xs[i]).toFixed(1) + ',' + self.sy(top[i - i0]).toFixed(1));
      }
      for (var j = i1 - 1; j >= i0; j--) {
        pts.push(self.sx(xs[j]).toFixed(1) + ',' + self.sy(below[j - i0]).toFixed(1));
      }
      if (pts.length) {
        var p = svg('polygon', {points: pts.join(' '), fill: c.color}, g);
        svg('title', {}, p).textContent = c.name;
      }
      below = top;
    });
    var line = [];
    for (var k = i0; k < i1; k++) {
      line.push(this.sx(xs[k]).toFixed(1) + ',' + this.sy(d.reserved[k]).toFixed(1));
    }
    if (line.length) { svg('polyline', {'class': 'reserved', points: line.join(' ')}, g); }
    if (this.fineOn()) {
      var fx = this.fx, fv = d.fine.v, fine = [];
      var f0 = Math.max(0, lowerBound(fx, this.dom[0]) - 1), f1 = Math.min(fx.length, lowerBound(fx, this.dom[1]) + 1);
      for (var f = f0; f < f1; f++) { fine.push(this.sx(fx[f]).toFixed(1) + ',' + this.sy(fv[f]).toFixed(1)); }
      if (fine.length) {
        var fl = svg('polyline', {'class': 'fine', points: fine.join(' ')}, g);
        svg('title', {}, fl).textContent = 'allocated, finer detail (' + (f1 - f0) + ' samples in view)';
      }
    }
    var bl = d.baseline, blx = this.blx;
    if (!bl) { return; }
    var b0 = Math.max(0, lowerBound(blx, this.dom[0]) - 1), b1 = Math.min(blx.length, lowerBound(blx, this.dom[1]) + 1);
    ['allocated', 'reserved'].forEach(function (key) {
      var pts = [];
      for (var i = b0; i < b1; i++) { pts.push(self.sx(blx[i]).toFixed(1) + ',' + self.sy(bl[key][i]).toFixed(1)); }
      if (pts.length) {
        var p = svg('polyline', {'class': 'baseline ' + key, points: pts.join(' ')}, g);
        svg('title', {}, p).textContent = 'baseline ' + key + ' (' + bl.snapshot + ')';
      }
    });
  };

  // The moments' ticks and the markers; returns the markers' boxes.
  Chart.prototype.drawMarks = function (g) {
    var self = this, d = this.d, boxes = [];
    d.moments.forEach(function (m, k) {
      var mx = self.ox(m);
      if (mx < self.dom[0] || mx > self.dom[1]) { return; }
      var t = svg('path', {'class': 'tick' + (k === self.sel ? ' sel' : ''), 'data-moment': k,
        d: 'M' + self.sx(mx) + ',' + (H - B) + 'l-5,9h10z'}, g);
      svg('title', {}, t).textContent = m.label + ' · ' + self.momentText(m) + ' · ' + bytes(m.allocated);
    });
    // The allocated peak (the figure the README says to gate) on top.
    var order = {'oom': 0, 'reserved-peak': 1, 'dynamic-peak': 2, 'allocated-peak': 3};
    d.marks.slice().sort(function (a, b) { return order[a.figure] - order[b.figure]; }).forEach(function (m) {
      var mx = self.mx(m);
      if (mx < self.dom[0] || mx > self.dom[1]) { return; }
      var x = self.sx(mx), y = self.sy(m.y), e;
      boxes.push([x - 8, y - 8, x + 8, y + 8]);
      if (m.figure === 'oom') {
        e = svg('path', {d: 'M' + (x - 6) + ',' + (y - 6) + 'l12,12m0,-12l-12,12'}, g);
        e.setAttribute('class', 'mark oom');
      } else {
        var shape = m.figure === 'allocated-peak' ? 'M' + x + ',' + (y - 7) + 'l7,7l-7,7l-7,-7z'
          : m.figure === 'dynamic-peak' ? 'M' + (x - 6) + ',' + (y - 6) + 'h12v12h-12z'
            : 'M' + x + ',' + (y - 7) + 'l7,12h-14z';
        e = svg('path', {'class': 'mark', d: shape, fill: m.figure === 'reserved-peak' ? '#fff' : '#ffd92f'}, g);
      }
      e.setAttribute('data-figure', m.figure);
      e.setAttribute('data-bytes', m.bytes);
      e.setAttribute('data-moment', m.moment);
      svg('title', {}, e).textContent = NAMES[m.figure] + ': ' + exact(m.y) + ' · ' +
        self.momentText(d.moments[m.moment]);
    });
    return boxes;
  };

  // Where a moment is: its time (when timed) and its entry.
  Chart.prototype.momentText = function (m) {
    return (this.d.axis === 's' ? seconds(m.x) + ' · ' : '') +
      (m.entry >= 0 ? 'after entry ' + m.entry : 'before the first entry');
  };

  // The sample nearest to pixel px.
  Chart.prototype.pointAt = function (px) {
    var xs = this.xs, x = this.ix(px), i = lowerBound(xs, x);
    if (i >= xs.length) { i = xs.length - 1; }
    if (i > 0 && x - xs[i - 1] < xs[i] - x) { i--; }
    return i;
  };
  Chart.prototype.indexOfEntry = function (entry) {
    var d = this.d;
    for (var i = 0; i < d.entry.length; i++) { if (d.entry[i] === entry) { return i; } }
    return -1;
  };

  // The readout for sample i; `px`: the pointer's pixel, whose samples'
  // lowest and highest are given too where it spans more than one.
  Chart.prototype.show = function (i, label, px) {
    var d = this.d, t = total(d, i), lines = [];
    lines.push((label ? label + ' · ' : '') + (d.axis === 's' ? seconds(d.x[i]) + ' · ' : '') +
      (d.entry[i] >= 0 ? 'after entry ' + d.entry[i] : 'before the first entry') +
      ' · allocated ' + exact(t) + ' · reserved ' + bytes(d.reserved[i]));
    var lo = t, hi = t, entry = d.entry[i];
    if (px !== undefined) {
      var a = lowerBound(this.xs, this.ix(px - 0.5)), b = lowerBound(this.xs, this.ix(px + 0.5)), n = b - a;
      for (var j = a; j < b; j++) { var v = total(d, j); lo = Math.min(lo, v); hi = Math.max(hi, v); }
      if (this.fineOn()) {
        // The finer level's samples under the pointer, and its nearest
        // one when nearer than the nearest sample.
        var fx = this.fx, x = this.ix(px), fa = lowerBound(fx, this.ix(px - 0.5)), fb = lowerBound(fx, this.ix(px + 0.5));
        for (var f = fa; f < fb; f++) { lo = Math.min(lo, d.fine.v[f]); hi = Math.max(hi, d.fine.v[f]); }
        n += fb - fa;
        var fj = Math.min(lowerBound(fx, x), fx.length - 1);
        if (fj > 0 && x - fx[fj - 1] < fx[fj] - x) { fj--; }
        if (Math.abs(fx[fj] - x) < Math.abs(this.xs[i] - x)) {
          t = d.fine.v[fj];
          entry = d.fine.e[fj] - 1;
          lines[0] = (d.axis === 's' ? seconds(d.fine.x[fj]) + ' · ' : '') + 'after entry ' + entry +
            ' · allocated ' + exact(t) + ' (finer detail; categories and reserved at the nearest sample, ' +
            (d.entry[i] >= 0 ? 'after entry ' + d.entry[i] : 'before the first entry') + ')';
          lo = Math.min(lo, t); hi = Math.max(hi, t);
        }
      }
      if (n > 1) {
        lines[0] += ' · this pixel: ' + n + ' samples, lowest ' + exact(lo) + ', highest ' + bytes(hi);
      }
    }
    lines.push(d.cats.map(function (c) { return c.name + ' ' + bytes(c.bytes[i]); }).join(' · '));
    var bl = d.baseline, blx = this.blx;
    if (bl && blx.length) {
      var k = Math.min(lowerBound(blx, this.xs[i]), blx.length - 1);
      lines.push('baseline (drawn at ' + this.xText(blx[k]) + '): allocated ' + bytes(bl.allocated[k]) +
        ' · reserved ' + bytes(bl.reserved[k]));
    }
    this.readout.textContent = lines.join('\n');
    this.readout.setAttribute('data-allocated', String(t));
    this.readout.setAttribute('data-low', String(lo));
    this.readout.setAttribute('data-high', String(hi));
    this.readout.setAttribute('data-entry', String(entry));
    var x = this.sx(this.xs[i]);
    this.hoverLine.setAttribute('x1', x);
    this.hoverLine.setAttribute('x2', x);
    this.hoverLine.setAttribute('visibility', 'visible');
  };

  Chart.prototype.onMove = function (e) {
    var px = this.px(e);
    if (this.drag) {
      var a = Math.max(L, Math.min(this.drag, px)), b = Math.min(W - R, Math.max(this.drag, px));
      this.brush.setAttribute('x', a);
      this.brush.setAttribute('width', b - a);
      this.brush.setAttribute('visibility', 'visible');
      return;
    }
    var m = e.target.getAttribute && e.target.getAttribute('data-moment');
    if (m !== null && m !== undefined && e.target.getAttribute('data-figure')) {
      var mo = this.d.moments[Number(m)], i = this.indexOfEntry(mo.entry);
      if (i >= 0) { this.show(i, NAMES[e.target.getAttribute('data-figure')]); return; }
    }
    if (px < L || px > W - R || !this.xs.length) { return; }
    this.show(this.pointAt(px), null, px);
  };

  Chart.prototype.onWheel = function (e) {
    e.preventDefault();
    var span = this.dom[1] - this.dom[0], full = this.full[1] - this.full[0];
    if (e.shiftKey) {
      var shift = span * 0.1 * (e.deltaY > 0 ? 1 : -1);
      this.setDomain(this.dom[0] + shift, this.dom[1] + shift);
      return;
    }
    var c = this.ix(this.px(e)), f = e.deltaY > 0 ? 1.25 : 0.8;
    var ns = Math.min(full, Math.max(span * f, full / 1e6));
    this.setDomain(c - (c - this.dom[0]) / span * ns, c - (c - this.dom[0]) / span * ns + ns);
  };

  Chart.prototype.setDomain = function (a, b) {
    var span = b - a;
    if (a < this.full[0]) { a = this.full[0]; b = a + span; }
    if (b > this.full[1]) { b = this.full[1]; a = Math.max(this.full[0], b - span); }
    if (b - a <= 0) { return; }
    this.dom = [a, b];
    this.draw();
  };

  Chart.prototype.onDown = function (e) {
    if (e.button !== 0) { return; }
    this.drag = this.px(e);
    this.downTarget = e.target;
  };

  Chart.prototype.onUp = function (e) {
    if (this.drag === undefined || this.drag === null) { return; }
    var a = this.drag, b = this.px(e);
    this.drag = null;
    this.brush.setAttribute('visibility', 'hidden');
    if (Math.abs(b - a) > 5) {
      this.setDomain(this.ix(Math.max(L, Math.min(a, b))), this.ix(Math.min(W - R, Math.max(a, b))));
      return;
    }
    var m = this.downTarget && this.downTarget.getAttribute && this.downTarget.getAttribute('data-moment');
    this.select(m !== null && m !== undefined ? Number(m) : this.nearestMoment(b));
  };

  Chart.prototype.nearestMoment = function (px) {
    var best = -1, dist = Infinity, self = this;
    this.d.moments.forEach(function (m, k) {
      var dd = Math.abs(self.sx(self.ox(m)) - px);
      if (dd < dist) { dist = dd; best = k; }
    });
    return best;
  };

  Chart.prototype.onKey = function (e) {
    var n = this.d.moments.length, span = this.dom[1] - this.dom[0], c = (this.dom[0] + this.dom[1]) / 2;
    if (e.key === 'ArrowRight' && n) { this.select(Math.min(n - 1, this.sel + 1)); }
    else if (e.key === 'ArrowLeft' && n) { this.select(Math.max(0, this.sel < 0 ? 0 : this.sel - 1)); }
    else if (e.key === 'Home' && n) { this.select(0); }
    else if (e.key === 'End' && n) { this.select(n - 1); }
    else if (e.key === '+' || e.key === '=') { this.setDomain(c - span * 0.4, c + span * 0.4); }
    else if (e.key === '-') { this.setDomain(c - span * 0.625, c + span * 0.625); }
    else if (e.key === 'Escape' || e.key === '0') { this.dom = this.full.slice(); this.draw(); }
    else { return; }
    e.preventDefault();
  };

  // Select moment k and list its stacks; `stay`: keep the zoom even when
  // the moment lies outside it.
  Chart.prototype.select = function (k, stay) {
    if (k < 0 || k >= this.d.moments.length) { return; }
    this.sel = k;
    var m = this.d.moments[k], mx = this.ox(m);
    if (!stay && (mx < this.dom[0] || mx > this.dom[1])) {
      var span = this.dom[1] - this.dom[0];
      this.setDomain(mx - span / 2, mx + span / 2);
    } else {
      this.draw();
    }
    this.renderMoment(m);
  };

  Chart.prototype.showSelected = function () {
    var m = this.d.moments[this.sel], mx = this.ox(m), x = this.sx(mx);
    if (mx >= this.dom[0] && mx <= this.dom[1]) {
      svg('line', {'class': 'selline', x1: x, x2: x, y1: T, y2: H - B}, this.svg);
    }
    var i = this.indexOfEntry(m.entry);
    if (i >= 0) { this.show(i, m.label); }
    var sel = this.svg.querySelectorAll('[data-moment="' + this.sel + '"]');
    for (var j = 0; j < sel.length; j++) { sel[j].classList.add('sel'); }
  };

  Chart.prototype.renderMoment = function (m) {
    var d = this.d, host = this.table;
    while (host.firstChild) { host.removeChild(host.firstChild); }
    var t = tag('table', null, host, 'moment');
    t.setAttribute('data-entry', String(m.entry));
    var label = m.label.split(', ').map(function (l) { return NAMES[l] || l; }).join(', ');
    tag('caption', 'Largest live allocations at ' + label + ' (' + this.momentText(m) + '): ' +
      exact(m.allocated) + ' live', t);
    var head = tag('tr', null, t);
    tag('th', 'bytes', head);
    tag('th', 'allocations', head);
    tag('th', 'call stack (Python frames first, C++ folded)', head, 'stack');
    var stories = {};
    m.stacks.forEach(function (st) {
      var row = tag('tr', null, t);
      var b = tag('td', exact(st.bytes), row);
      b.setAttribute('data-bytes', String(st.bytes));
      tag('td', String(st.count), row);
      var cell = tag('td', null, row, 'stack');
      st.lines.forEach(function (l) {
        // Folded, and cut with an ellipsis when too long: the full line on hover.
        var full = d.lines[l];
        tag('div', fold(full), cell).title = full;
      });
      if (st.no_frames) {
        // Memory with no story: its one name, explained under the table.
        tag('div', st.no_frames[0] + ' (no frames)', cell);
        stories[st.no_frames[0]] = st.no_frames[1];
      }
    });
    Object.keys(stories).sort().forEach(function (n) {
      tag('p', n + ': ' + stories[n], host, 'note');
    });
  };

  var charts = document.querySelectorAll('.chart[data-index]');
  for (var c = 0; c < charts.length; c++) {
    var k = Number(charts[c].getAttribute('data-index'));
    new Chart(charts[c], data.devices[k], k);
  }
})();
