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
  let pending = false;
  new MutationObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      document.querySelectorAll('.toast-title').forEach(retitle);
    });
  }).observe(document.documentElement, {childList: true, subtree: true});
})();
