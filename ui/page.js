// The app's own page script (app.py serves it in the page's head, once): buttons on every plot's toolbar and
// Plotly's strings in the page's language. What the app changes in Gradio's page is ui/gradio_patches.js.
(() => {
  // Plotly's camera button downloads a PNG; beside it go two more buttons, for every plot of every tab: the same
  // figure as SVG (through plotly's own exporter) and the numbers drawn (each trace's x, y, z and hover labels)
  // as JSON -- for an attention heatmap, the weights.
  const icon = (label) => `<svg viewBox="0 0 28 16" height="1em" width="1.75em" class="icon">
    <text x="0" y="13" font-size="12" font-family="monospace" font-weight="bold" fill="currentColor">${label}</text></svg>`;
  const plain = (v) => ArrayBuffer.isView(v) ? Array.from(v) : Array.isArray(v) ? v.map(plain) : v;
  const save = (name, text, type) => {
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([text], {type}));
    a.download = name;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  };
  // its words, from the catalogue (app.py), in the page's language
  const words = () => (window.labPageWords || {})[window.labLang] || (window.labPageWords || {}).en || {};
  const addButtons = (modebar) => {
    if (modebar.querySelector('.lab-svg')) return;
    // plotly's camera button, titled in the page's language (plotly's zh-CN locale, below)
    const camera = modebar.querySelector('[data-title^="Download plot"], [data-title^="下载图表"]');
    const gd = modebar.closest('.js-plotly-plot');
    if (!camera || !gd) return;
    // PNGs at twice the screen resolution, so a figure stays sharp on a slide
    camera.addEventListener('click', () => {
      gd._context.toImageButtonOptions = {filename: 'transformer-lab', scale: 2, ...gd._context.toImageButtonOptions};
    }, true);
    const svg = camera.cloneNode(false);
    svg.classList.add('lab-svg');
    svg.setAttribute('data-title', words().export_svg);  // worded as plotly's own camera button
    svg.innerHTML = icon('SVG');
    svg.addEventListener('click', () => {
      const saved = gd._context.toImageButtonOptions;
      gd._context.toImageButtonOptions = {...saved, format: 'svg'};
      camera.click();
      gd._context.toImageButtonOptions = saved;
    });
    const data = camera.cloneNode(false);
    data.setAttribute('data-title', words().export_json);
    data.innerHTML = icon('{}');
    data.addEventListener('click', () => {
      const title = gd.layout.title && (gd.layout.title.text || gd.layout.title);
      // _fullData holds the arrays decoded (plotly.py may send them base64-packed in `data`)
      const traces = gd.data.map((t, i) => {
        const full = gd._fullData.find((f) => f.index === i) || t;
        return Object.fromEntries(['type', 'name', 'x', 'y', 'z', 'customdata', 'text']
          .filter((key) => t[key] !== undefined).map((key) => [key, plain(full[key] ?? t[key])]));
      });
      save('transformer-lab-data.json', JSON.stringify({title: title || '', traces}), 'application/json');
    });
    camera.after(svg, data);
  };
  // A table too wide for a phone: a figure that names the width its writing needs (layout.meta.min_width: the
  // logit lens's guesses written in 29 columns crossed each other in 300 px) is drawn that wide on a phone's screen
  // and scrolls sideways, as a phone shows any wide table, its title at the left edge where the screen shows it
  const PHONE = matchMedia('(max-width: 640px)');
  const widen = (gd) => {
    const least = gd.layout && gd.layout.meta && gd.layout.meta.min_width;
    if (!least || !PHONE.matches || !gd._fullLayout || gd._fullLayout.width >= least || !window.Plotly) return;
    gd.parentElement.style.overflowX = 'auto';
    window.Plotly.relayout(gd, {width: least, 'title.x': 0, 'title.xanchor': 'left', 'title.pad.l': 10});
  };
  // A title or a note wider than its figure: the server writes one line for a projector's figure, and a phone's
  // figure (about 320 px) cut it at both edges. It is broken into lines where views/kit.wrapped breaks a line
  // (after a space or a Chinese comma or colon, before a Chinese bracket, never inside a tag), each at most
  // the figure's width; its top margin grows by the lines its title gains (its height stays: a height given in
  // relayout fixes the width too, and a phone turned sideways kept a phone's figure).
  const pieces = (text) => {  // the places a line may break, with markup kept whole
    const out = [];
    let piece = '', tag = false;
    for (const ch of text) {
      if (!tag && ch === '（' && piece) { out.push(piece); piece = ''; }
      piece += ch;
      tag = ch === '<' ? true : ch === '>' ? false : tag;
      if (!tag && ' ：，、；'.includes(ch)) { out.push(piece); piece = ''; }
    }
    return piece ? [...out, piece] : out;
  };
  const broken = (text, el, room) => {
    const ctx = (broken.canvas = broken.canvas || document.createElement('canvas')).getContext('2d');
    const style = getComputedStyle(el);
    ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const wide = (s) => ctx.measureText(s.replace(/<[^>]*>/g, '').replace(/&[a-z#0-9]+;/g, '_')).width > room;
    return text.split('<br>').flatMap((line) => {
      const lines = [];
      let now = '';
      for (const piece of pieces(line)) {
        if (now.trim() && wide((now + piece).trimEnd())) { lines.push(now.trimEnd()); now = ''; }
        now += piece;
      }
      return [...lines, now.trimEnd()];
    }).join('<br>');
  };
  // An axis's token labels thinned to every k-th where they would run into each other: the server names up to 40
  // keys (views/kit.ticks), as many as a projector's figure holds, and a phone's figure is a third as wide. k comes
  // from a label's room (plotly turns crowded labels upright) and the labels' spacing at this width; the server's
  // labels are kept, so a wider screen gets them all back.
  const thin = (gd, full, update) => {
    if (gd._labTicksOf !== gd.layout) {  // a new figure: its labels as the server sent them
      gd._labTicksOf = gd.layout;
      gd._labTicks = {};
      for (const name of Object.keys(gd.layout).filter((n) => /^xaxis\d*$/.test(n))) {
        const {tickvals, ticktext} = gd.layout[name];
        if (tickvals && ticktext && tickvals.length > 1) gd._labTicks[name] = {tickvals, ticktext, k: 1};
      }
    }
    for (const [name, sent] of Object.entries(gd._labTicks)) {
      const axis = full[name];
      const labels = Array.from(gd.querySelectorAll(`.${axis._id}tick text`))
        .filter((e) => e.getBoundingClientRect().width > 0);
      if (!labels.length) continue;  // none drawn: a phone hides a token grid's keys (ui/page.css)
      // labels kept level (a grid's head names) need their width, upright ones a line's height (14 px at 12 px)
      const need = axis.tickangle === 0 ? Math.max(...labels.map((e) => e.getBoundingClientRect().width)) + 4
        : parseFloat(getComputedStyle(labels[0]).fontSize) + 2;
      const pitch = Math.abs(axis.d2p(sent.tickvals[1]) - axis.d2p(sent.tickvals[0]));
      if (!(pitch > 0)) continue;  // (a value plotly cannot place: its labels are left as sent)
      const k = Math.max(1, Math.ceil(need / pitch));
      if (k === sent.k) continue;
      sent.k = k;
      update[`${name}.tickvals`] = Array.from(sent.tickvals).filter((_, i) => i % k === 0);
      update[`${name}.ticktext`] = Array.from(sent.ticktext).filter((_, i) => i % k === 0);
    }
  };
  const fit = (gd) => {
    const full = gd._fullLayout;
    // once per figure drawn (a new one is a new layout) at each width (plotly fits it to its box after drawing)
    if (!full || !window.Plotly || !gd.offsetParent || (gd._labFitted === gd.layout && gd._labWidth === full.width)) return;
    [gd._labFitted, gd._labWidth] = [gd.layout, full.width];
    const room = full.width - 20, update = {};
    const title = gd.querySelector('.gtitle');
    if (title && full.title.text && title.getBoundingClientRect().width > room) {
      const text = broken(full.title.text, title, room), size = parseFloat(getComputedStyle(title).fontSize);
      const was = full.title.text.split('<br>').length, added = text.split('<br>').length - was;
      update['title.text'] = text;
      update['margin.t'] = full.margin.t + added * 1.3 * size;
      // plotly lowers a title of one line by 0.7em but places one of several by its first line's baseline,
      // which then stands above the figure's edge (as views/kit.top_title says)
      if (was === 1 && added > 0 && full.title.yanchor === 'top') update['title.pad.t'] = full.title.pad.t + 0.7 * size;
    }
    // a note (a placeholder's message, a panel's title) has the room between the figure's edges, and up to the
    // nearest note beside it: two panels' titles on a phone ran into each other
    const notes = gd.layout.annotations || [], edges = gd.getBoundingClientRect();
    const drawnNote = (i) => gd.querySelector(`.annotation[data-index="${i}"] .annotation-text`);
    // a row of panels' names too close for names that cannot break (a phone's 12 heads: "H10" is 22 px wide, 17
    // px apart) keeps every k-th; a hover names each cell's head
    const hidden = new Set(), names = notes.map((note, i) => i).filter((i) => notes[i].xref === 'paper'
      && notes[i].yanchor === 'bottom' && notes[i].y >= 1 && typeof notes[i].text === 'string');
    const whole = (i) => notes[i].text.split('<br>').every((line) => pieces(line).length === 1);
    const drawnNames = names.map(drawnNote).filter(Boolean);
    if (names.length > 2 && drawnNames.length && names.every(whole)) {
      const pitch = Math.abs(notes[names[1]].x - notes[names[0]].x) * full._size.w;
      const widest = Math.max(...drawnNames.map((e) => e.getBoundingClientRect().width));
      const k = pitch > 0 ? Math.ceil((widest + 4) / pitch) : 1;
      names.forEach((i, n) => {
        const shown = n % k === 0;  // and those hidden at a narrower width shown again
        if (!shown) hidden.add(i);
        if ((notes[i].visible !== false) !== shown) update[`annotations[${i}].visible`] = shown;
      });
    }
    let above = 0;
    notes.forEach((note, i) => {
      const text = drawnNote(i);
      if (!text || hidden.has(i) || note.xref !== 'paper' || typeof note.text !== 'string') return;
      const r = text.getBoundingClientRect(), middle = (r.left + r.right) / 2;
      const inside = {left: edges.right - r.left, right: r.right - edges.left}[note.xanchor]
        ?? 2 * Math.min(middle - edges.left, edges.right - middle);
      const gap = Math.min(...notes.filter((o, j) => j !== i && !hidden.has(j) && o.xref === 'paper' && o.y === note.y)
        .map((o) => Math.abs(o.x - note.x) * full._size.w));
      const width = Math.min(room, inside - 8, gap - 12);
      if (r.width <= width) return;
      const lines = broken(note.text, text, width);
      update[`annotations[${i}].text`] = lines;
      // a panel's title grows upwards: the figure's top grows with it
      if (note.yanchor === 'bottom' && note.y >= 1) {
        above = Math.max(above, (lines.split('<br>').length - note.text.split('<br>').length)
          * 1.3 * parseFloat(getComputedStyle(text).fontSize));
      }
    });
    if (above > 0) update['margin.t'] = (update['margin.t'] || full.margin.t) + above;
    thin(gd, full, update);
    if (Object.keys(update).length) window.Plotly.relayout(gd, update);
  };
  let pending = false;
  new MutationObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      document.querySelectorAll('.modebar').forEach(addButtons);
      document.querySelectorAll('.js-plotly-plot').forEach((gd) => { widen(gd); fit(gd); });
    });
  }).observe(document.documentElement, {childList: true, subtree: true});

  // Plotly's own strings (the toolbar's hover titles) in the page's language, through plotly.js's public ways:
  // its zh-CN locale waits in window.PlotlyLocales, which plotly.js registers as it loads, and the page's
  // language is every plot's default locale (setPlotConfig), set when plotly.js loads and at each switch
  window.labPlotLocale = () => window.Plotly && window.Plotly.setPlotConfig({locale: window.labLang || 'en'});
  (window.labWhenPlotly = window.labWhenPlotly || []).push(window.labPlotLocale);

  // A click's result in sight (issue 60): a result below the first screen of a projector or a phone made a click
  // seem to do nothing. The main buttons' results are named in window.labResults (ui/links.RESULTS); another
  // primary button's is the first output after it. The result is scrolled to at once (its spinner shows where it
  // will be) and again once drawn, each time only when less than SIGHT_PX of it is on the screen.
  const SIGHT_PX = 150;
  const SETTLE_MS = 1500;
  const visible = (el) => !!el && el.offsetParent !== null && el.getBoundingClientRect().height > 0;
  const inSight = (el) => { const r = el.getBoundingClientRect();
    return r.top >= -1 && r.top <= innerHeight - Math.min(SIGHT_PX, r.height); };
  // as little scrolling as shows a good part of it (up to 45% of the screen): what is above it, the button that
  // asked for it, stays in sight where it can
  const bring = (el) => {
    if (!visible(el) || inSight(el)) return;
    const r = el.getBoundingClientRect();
    if (r.top < 0) { el.scrollIntoView({block: 'start'}); return; }
    window.scrollBy(0, r.top - (innerHeight - Math.min(r.height, 0.45 * innerHeight)) + 8);
  };
  window.labBring = bring;
  window.labPlaced = (el) => visible(el) && inSight(el);
  const resultOf = (button) => {
    const named = (window.labResults || {})[button.id];
    if (named) return document.querySelector(named);
    if (!button.classList.contains('primary')) return null;
    const panel = button.closest('[role=tabpanel]');
    const after = (el) => button.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING;
    return panel && Array.from(panel.querySelectorAll('.block')).find((b) => after(b) && !b.contains(button)
      && visible(b) && b.querySelector('.js-plotly-plot, .prose, [data-testid=status-tracker]'));
  };
  const busy = (el) => Array.from(el.querySelectorAll('[data-testid=status-tracker]'))
    .some((s) => visible(s) && !s.classList.contains('hide'));
  window.labBusy = (el) => !!el && busy(el.closest('.block') || el);
  document.addEventListener('click', (event) => {
    const button = event.target.closest && event.target.closest('button');
    if (!button || button.closest('#lecture-controls, [role=tablist]')) return;  // a step scrolls on its own
    const started = Date.now();
    let idleSince = null, left = null;  // left: where the follow left the page's scroll
    const follow = () => {
      // the person scrolled since: where they look is theirs now (a follow that pulled them back to the result
      // while they read another figure was a page that fought them)
      if (left !== null && Math.abs(scrollY - left) > 2) return;
      const result = resultOf(button);
      if (!result) return;
      bring(result);
      left = scrollY;
      // the click's outputs are still coming while anything in its tab waits (the result's own block may show no
      // spinner: a verdict's label does not)
      const waiting = busy(button.closest('[role=tabpanel]') || result.closest('.block') || result);
      const now = Date.now();
      idleSince = waiting ? null : (idleSince || now);
      // followed a while after it is drawn too: on a loaded machine the outputs around it are laid out later,
      // and a result that grew (a verdict's bars) or was pushed down once its wait ended sat half off the screen
      if (idleSince === null || now - started < 400 || now - idleSince < SETTLE_MS) {
        if (now - started < 60000) setTimeout(follow, 200);
      }
    };
    setTimeout(follow, 50);
  }, true);
})();
