// The page's half of ui/gradio_patches.py: what the app changes in Gradio's (6.31) page, each with its reason.
(() => {
  // 6. Drawing a figure once. What Gradio does: its Plot draws every new figure twice. The plot on the page
  // redraws itself with the figure (PlotlyPlot-*.js: `Plotly.react(...)`), then, in the same update, a {#key}
  // block throws that plot away and draws the figure again in a fresh one; the plot thrown away is never purged,
  // and its window 'resize' listener keeps it and its figure alive. Why that fails our users: on a 128-token
  // Attention view the second drawing was a third of the click's wait, and each click leaked its figures.
  // The patch: a plot is drawn into a moment later (a microtask, after the update), which skips the plot thrown
  // away, and that plot is purged. Where the {#key} block has already taken the old plot off the page when Gradio
  // redraws it (the Forward pass tab's figures), it is purged at once. A fresh plot not on the page yet (never
  // drawn) goes straight through. Tested in tests/app/test_browser_attention.py.
  const deferReact = (Plotly) => {
    if (!Plotly || typeof Plotly.react !== 'function' || Plotly.react.deferred) return;
    const react = Plotly.react;
    const deferred = function (gd, ...rest) {
      if (!(gd instanceof Element)) return react.call(this, gd, ...rest);
      if (!gd.isConnected) {
        if (!gd._fullLayout) return react.call(this, gd, ...rest);
        Plotly.purge(gd);  // drawn before, and thrown away
        return Promise.resolve(gd);
      }
      return new Promise((resolve, reject) => queueMicrotask(() => {
        if (!gd.isConnected) { Plotly.purge(gd); resolve(gd); return; }  // thrown away in the same update
        try { Promise.resolve(react.call(this, gd, ...rest)).then(resolve, reject); } catch (e) { reject(e); }
      }));
    };
    deferred.deferred = true;
    Plotly.react = deferred;
  };
  // Gradio loads plotly.js on demand and sets window.Plotly once it has: it is patched as it is set, and the
  // page's own set-up (window.labWhenPlotly, ui/page.js) runs then too
  const loaded = (Plotly) => {
    deferReact(Plotly);
    (window.labWhenPlotly || []).forEach((setUp) => setUp(Plotly));
  };
  if (window.Plotly) {
    loaded(window.Plotly);
  } else {
    let plotly;
    Object.defineProperty(window, 'Plotly', {configurable: true, enumerable: true, get: () => plotly,
      set: (value) => { plotly = value; loaded(value); }});
  }

  // 7. Toast titles in the page's language. What Gradio does: it titles a toast with its kind, capitalised, in
  // English in every locale (statustracker-*.js: `t.type.charAt(0).toUpperCase()+t.type.slice(1)`); gr.Error's
  // `title` is not shown. Why that fails our users: a Chinese page's error toast is headed "Error". The patch:
  // the title's text is put in the page's language (window.labToastTitles, from the catalogue) as toasts appear.
  const retitle = (title) => {
    const titles = window.labToastTitles;
    const kind = Object.keys(titles.en).find((k) => title.classList.contains(k));
    const node = Array.from(title.childNodes).find((n) => n.nodeType === Node.TEXT_NODE && n.data.trim());
    const word = kind && (titles[window.labLang] || titles.en)[kind];
    if (node && word && node.data.trim() !== word) node.data = word + ' ';
  };

  // 12. A wait's status in the page's language. What Gradio does: while an event waits or runs, the output's status
  // line says "queue: 2/5 |" or "processing |" in English in every locale (statustracker-*.js: `queue:
  // ${o.queue_position+1}/...` and `processing |`, not Gradio's i18n). Why that fails our users: every wait on a
  // Chinese page spoke English. The patch: the status line's first words are put in the page's language
  // (window.labStatusWords, from the catalogue) as they change; the timer after them is Gradio's.
  const statusWords = () => Object.values(window.labStatusWords);
  const restatus = (status) => {
    const words = window.labStatusWords[window.labLang] || window.labStatusWords.en;
    const node = Array.from(status.childNodes).find((n) => n.nodeType === Node.TEXT_NODE && n.data.trim());
    if (!node) return;
    let said = null;
    if (statusWords().some((w) => w.processing === node.data)) said = words.processing;
    for (const w of statusWords()) {  // "queue: {position}/{size} |" in any language, read back
      const [before, rest] = w.queue.split('{position}');
      const [between, after] = rest.split('{size}');
      if (said === null && node.data.startsWith(before) && node.data.endsWith(after)) {
        const [position, size] = node.data.slice(before.length, node.data.length - after.length).split(between);
        if (size !== undefined) said = words.queue.replace('{position}', position).replace('{size}', size);
      }
    }
    if (said !== null && node.data !== said) node.data = said;
  };

  // 7 and 12: a frame after the page changed, its toasts' titles and statuses are put in its language
  let pending = false;
  new MutationObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      document.querySelectorAll('.toast-title').forEach(retitle);
      document.querySelectorAll('.progress-text').forEach(restatus);
    });
  }).observe(document.documentElement, {childList: true, characterData: true, subtree: true});
})();
