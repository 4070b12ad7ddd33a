// The Tokens tab's chips drawn as a person types (app.py serves this in the page's head, once). Our byte-level
// BPEs and character tokenizers run here, on tables fetched once from /lab/tokenizers.json (ui/tokens.py), and
// each draws its panel as views/tokens.py does, character for character (tests/app/test_browser_tokens_page.py
// compares them). The server's answer, every tokenizer's panel, then replaces the page's; panels the page cannot
// draw (WordPiece, unigram, a model that reads simplified characters) are dimmed (.pending) until it comes. Tokenizing stays the server's too: the API
// and the agents' tools read the same `tokenize` endpoint.
(() => {
  const TABLES = 'lab/tokenizers.json';  // relative: the app may be served under a path
  const KEPT = 16;  // recent texts whose drafts are remembered, to tell a late answer for one of them

  // -- GPT-2's byte-level BPE, as `tokenizers` runs it

  // The pre-tokenizer's pattern (tokenizers' ByteLevel). Its \s is Oniguruma's: \t-\r, U+0085 and the
  // separators (Zs, Zl, Zp), which JavaScript's \s is not (it lacks U+0085 and adds U+FEFF).
  const S = '\\t-\\r\\x85\\p{Zs}\\p{Zl}\\p{Zp}';
  const WORDS = new RegExp(`'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^${S}\\p{L}\\p{N}]+|[${S}]+(?![^${S}])|[${S}]+`,
    'gu');
  const utf8 = new TextEncoder();

  // a tokenizer's table: a character tokenizer's ids by character; a BPE's id of each byte, and each merge's
  // rank by its pair of ids
  const ready = (table) => {
    if (table.chars) return {...table, chars: new Map(Object.entries(table.chars))};
    const rank = new Map();
    for (let r = 0; r < table.merges.length / 2; r++) rank.set(table.merges[2 * r] * 2 ** 21 + table.merges[2 * r + 1], r);
    return {...table, rank};
  };

  // One word's tokens as [id, byte length]: the lowest-ranked pair merged everywhere, left to right, until
  // no pair has a merge (each merge makes id `first + rank`)
  const bpe = (tok, bytes) => {
    let symbols = Array.from(bytes, (b) => [tok.bytes[b], 1]);
    for (;;) {
      let best = Infinity;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const r = tok.rank.get(symbols[i][0] * 2 ** 21 + symbols[i + 1][0]);
        if (r !== undefined && r < best) best = r;
      }
      if (best === Infinity) return symbols;
      const [left, right] = [tok.merges[2 * best], tok.merges[2 * best + 1]], merged = [];
      for (let i = 0; i < symbols.length; i++) {
        if (i + 1 < symbols.length && symbols[i][0] === left && symbols[i + 1][0] === right) {
          merged.push([tok.first + best, symbols[i][1] + symbols[i + 1][1]]);
          i++;
        } else merged.push(symbols[i]);
      }
      symbols = merged;
    }
  };

  // bytes.decode("utf-8", errors="backslashreplace"): a byte of no whole character is written \xNN
  const decode = (bytes) => {
    let out = '';
    for (let i = 0; i < bytes.length;) {
      const b = bytes[i];
      const [n, low, high] = b < 0x80 ? [0] : b >= 0xc2 && b <= 0xdf ? [1, 0x80, 0xbf]
        : b === 0xe0 ? [2, 0xa0, 0xbf] : b === 0xed ? [2, 0x80, 0x9f] : b >= 0xe1 && b <= 0xef ? [2, 0x80, 0xbf]
          : b === 0xf0 ? [3, 0x90, 0xbf] : b === 0xf4 ? [3, 0x80, 0x8f] : b >= 0xf1 && b <= 0xf3 ? [3, 0x80, 0xbf]
            : [-1];
      let whole = n >= 0 && i + n < bytes.length;
      for (let k = 1; whole && k <= n; k++) {
        const c = bytes[i + k];
        whole = k === 1 ? c >= low && c <= high : c >= 0x80 && c <= 0xbf;
      }
      if (!whole) {
        out += `\\x${b.toString(16).padStart(2, '0')}`;
        i += 1;
        continue;
      }
      let code = n === 0 ? b : b & (0x3f >> n);
      for (let k = 1; k <= n; k++) code = (code << 6) | (bytes[i + k] & 0x3f);
      out += String.fromCodePoint(code);
      i += n + 1;
    }
    return out;
  };

  // TextTokenizer.tokens: [{id, text, start, end, byteStart, byteEnd}], start:end in characters (code points)
  const tokens = (tok, chars, unknown) => {
    const text = chars.join(''), bytes = utf8.encode(text);
    const byteStarts = [0];
    for (const c of chars) byteStarts.push(byteStarts[byteStarts.length - 1] + utf8.encode(c).length);
    if (tok.chars) {  // a token a character, [UNK] for one the vocabulary lacks
      return chars.map((c, i) => ({id: tok.chars.has(c) ? tok.chars.get(c) : tok.unknown,
        text: tok.chars.has(c) ? c : unknown, start: i, end: i + 1, byteStart: byteStarts[i], byteEnd: byteStarts[i + 1]}));
    }
    const spans = [];
    let position = 0, char = 0;
    for (const [word] of text.matchAll(WORDS)) {
      for (const [id, length] of bpe(tok, utf8.encode(word))) {
        const byteEnd = position + length;
        while (byteStarts[char + 1] <= position) char++;
        let end = char;
        while (byteStarts[end] < byteEnd) end++;
        spans.push({id, text: decode(bytes.subarray(position, byteEnd)), start: char, end, byteStart: position, byteEnd});
        position = byteEnd;
      }
    }
    return spans;
  };

  // -- the panel views/tokens.py draws

  const escape = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;').replace(/'/g, '&#x27;');  // html.escape(s, quote=True)
  const hex = (code, width) => code.toString(16).padStart(width, '0');
  const SHOWN_AS = {' ': '·', '\n': '↵', '\t': '⇥'};
  const CONTROL = /^\p{Cc}$/u, INVISIBLE = /^[\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u;
  const visible = (s) => Array.from(s, (c) => SHOWN_AS[c] || (CONTROL.test(c) ? `\\x${hex(c.codePointAt(0), 2)}`
    : INVISIBLE.test(c) ? `<U+${hex(c.codePointAt(0), 4).toUpperCase()}>` : c)).join('');

  // Python's repr() of a str
  const UNPRINTABLE = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u;
  const repr = (s) => {
    const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
    const body = Array.from(s, (c) => {
      const code = c.codePointAt(0);
      if (c === quote || c === '\\') return `\\${c}`;
      if (c === '\t') return '\\t';
      if (c === '\n') return '\\n';
      if (c === '\r') return '\\r';
      if (code < 0x20 || code === 0x7f) return `\\x${hex(code, 2)}`;
      if (code < 0x7f || (c !== ' ' && !UNPRINTABLE.test(c))) return c;
      return code <= 0xff ? `\\x${hex(code, 2)}` : code <= 0xffff ? `\\u${hex(code, 4)}` : `\\U${hex(code, 8)}`;
    }).join('');
    return quote + body + quote;
  };

  // Python's format(x, f".{digits}f"): a value exactly halfway rounds to even, where toFixed rounds up
  const fixed = (x, digits) => {
    const halfway = Number.isInteger(x * 2 ** (digits + 1)) && !Number.isInteger(x * 2 ** digits);
    if (!halfway) return x.toFixed(digits);
    const n = Math.floor(x * 10 ** digits);
    return ((n % 2 ? n + 1 : n) / 10 ** digits).toFixed(digits);
  };
  const FORMATS = {'': String, ',': (v) => String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ','), '.0f': (v) => fixed(v, 0),
    '.2f': (v) => fixed(v, 2)};
  // i18n.t: the catalogue's str.format templates, with the few formats a panel uses
  const t = (data, lang, key, params) => data.messages[lang][key].replace(/\{\{|\}\}|\{(\w+)(?::([^}]*))?\}/g,
    (all, name, spec = '') => name === undefined ? all[0] : FORMATS[spec](params[name]));
  const plural = (data, lang, n, noun) => t(data, lang, `count.${noun}.${n === 1 ? 'one' : 'other'}`, {n});
  const colour = (key) => `hsl(${fixed(key * 137.508 % 360, 0)}, 75%, 85%)`;
  const hint = (message) => `<p class="hint">${escape(message)}</p>`;

  // views.tokenizer_panel for a text (its characters) under one of the tables' tokenizers
  const panel = (data, tok, chars, lang) => {
    const spans = tokens(tok, chars, data.unknown);
    const bytesOf = (start, end) => utf8.encode(chars.slice(start, end).join('')).length;
    let fragments = 0;
    const chips = spans.map((span, k) => {
      const whole = chars.slice(span.start, span.end).join('');
      const fragment = span.byteEnd - span.byteStart < bytesOf(span.start, span.end);
      fragments += fragment;
      if (k >= data.chips_shown) return '';
      let title = t(data, lang, 'tokens.chip_title', {id: span.id, start: span.start, end: span.end, text: repr(whole),
        byte_start: span.byteStart, byte_end: span.byteEnd});
      if (fragment) title += t(data, lang, 'tokens.fragment_title', {char: repr(whole), n: bytesOf(span.start, span.end)});
      return `<span class="${fragment ? 'tok fragment' : 'tok'}" data-id="${span.id}" style="background:${colour(span.id)}"`
        + ` title="${escape(title)}">${escape(visible(span.text))}<sub>${span.id}</sub></span>`;
    }).join('');
    const cut = spans.length > data.chips_shown
      ? hint(t(data, lang, 'tokens.chips_cut', {shown: data.chips_shown, n: spans.length})) : '';
    const n = {chars: chars.length, bytes: bytesOf(0, chars.length), tokens: spans.length};
    const line = t(data, lang, 'tokens.counts', {chars: plural(data, lang, n.chars, 'character'),
      bytes: plural(data, lang, n.bytes, 'byte'), tokens: plural(data, lang, n.tokens, 'token'),
      per_token: n.chars / n.tokens});
    const cost = t(data, lang, 'tokens.cost', {per_char: n.tokens / n.chars, per_token: n.bytes / n.tokens, fragments});
    const unread = tok.chars ? spans.filter((s) => s.id === tok.unknown).length : 0;
    const body = unread / spans.length > data.unreadable ? hint(t(data, lang, 'tokens.cannot_represent',
      {n_unknown: unread, n: spans.length, unknown: data.unknown, vocab: tok.vocab})) : `<div class="chips">${chips}</div>${cut}`;
    return `<div class="panel"><h4>${escape(tok.label[lang])}</h4><div class="counts">${line}<br>${cost}</div>${body}</div>`;
  };

  // lab/policy.truncate: lone surrogates repaired, then the first max_chars characters
  const read = (data, text) => Array.from((text || '').replace(/\p{Cs}/gu, '\ufffd')).slice(0, data.max_chars);

  // -- the tab: drafts as the person types, the server's answer kept once it is for the text in the box

  let data = null, loading = null;
  const load = () => loading = loading || fetch(TABLES).then((r) => r.ok ? r.json() : Promise.reject(r.status))
    .then((d) => { data = {...d, tokenizers: d.tokenizers.map(ready)}; soon(draw); })
    .catch((error) => { loading = null; console.warn('Tokens: drawn by the server only', error); });

  const box = () => document.querySelector('#tokens_text textarea');
  const lang = () => window.labLang === 'zh-CN' ? 'zh-CN' : 'en';
  const drafts = new Map();  // `${lang}\n${text}` -> {label: panel HTML, as a browser writes it back}
  const draftOf = (text) => {
    const key = `${lang()}\n${text}`;
    if (!drafts.has(key)) {
      const chars = read(data, text), written = document.createElement('template');
      drafts.set(key, Object.fromEntries(chars.length ? data.tokenizers.map((tok) => {
        written.innerHTML = panel(data, tok, chars, lang());
        return [tok.label[lang()], written.innerHTML];
      }) : []));
      if (drafts.size > KEPT) drafts.delete(drafts.keys().next().value);
    }
    return drafts.get(key);
  };
  const labelOf = (el) => (el.querySelector(':scope > h4') || {}).textContent;

  // The page's panels for the box's text in place of those drawn for another text, the rest dimmed; nothing
  // when they show it already (the same text again: the server, asked nothing, would never undim them)
  const draw = () => {
    const textbox = box(), chips = document.querySelector('#tokens-chips');
    if (!data || !textbox || !chips || !read(data, textbox.value).length) return;
    const blank = chips.querySelector('.hint:not(.panel .hint)');  // the empty text's hint: no panels yet
    if (blank) blank.outerHTML = '<div class="panels"></div>';
    const panels = chips.querySelector('.panels'), fresh = draftOf(textbox.value);
    if (!panels) return;
    const shown = Array.from(panels.children).filter((el) => el.classList.contains('panel'));
    const labels = new Set(shown.map(labelOf));
    const stale = shown.filter((el) => fresh[labelOf(el)] !== undefined && el.outerHTML !== fresh[labelOf(el)]);
    const missing = Object.keys(fresh).filter((label) => !labels.has(label));
    if (!stale.length && !missing.length) return;
    for (const el of shown) if (fresh[labelOf(el)] === undefined) el.classList.add('pending');
    for (const el of stale) el.outerHTML = fresh[labelOf(el)];
    for (const label of missing) panels.insertAdjacentHTML('beforeend', fresh[label]);
  };

  // An answer the server drew is kept unless it is the draft of another text typed since (an answer
  // overtaken while the person types on): then the box's text is drawn again. An answer the page never drafted
  // (an example, a link, a tokenizer the page reads differently) is the server's word, and stands.
  const check = () => {
    const textbox = box(), panels = document.querySelector('#tokens-chips .panels');
    if (!data || !textbox || !panels) return;
    const now = draftOf(textbox.value);
    const drawn = Array.from(panels.children).find((el) => el.classList.contains('panel') && now[labelOf(el)] !== undefined);
    if (!drawn || drawn.outerHTML === now[labelOf(drawn)]) return;
    const overtaken = Array.from(drafts).some(([key, old]) => key.startsWith(`${lang()}\n`) && old !== now
      && old[labelOf(drawn)] === drawn.outerHTML);
    if (overtaken) draw();
  };

  const waiting = new Set();  // what the next frame does: at most one draw and one check, however many events
  const soon = (fn) => {
    if (!waiting.size) requestAnimationFrame(() => { const now = [...waiting]; waiting.clear(); now.forEach((f) => f()); });
    waiting.add(fn);
  };
  document.addEventListener('input', (event) => {
    if (!event.target.closest || !event.target.closest('#tokens_text')) return;
    if (!data) { load(); return; }
    // every text typed is drafted, not only those a frame drew: a late answer for one a frame skipped (fast
    // typing) is then known as overtaken, where it stood until the last answer came
    draftOf(box().value);
    soon(draw);
  }, true);
  document.addEventListener('focusin', (event) => {
    if (event.target.closest && event.target.closest('#tokens_text')) load();
  }, true);
  // fetched once the page is built with the Tokens tab in sight (its first tab), not on a link to another tab
  const watch = () => {
    const chips = document.querySelector('#tokens-chips');
    if (!chips) { setTimeout(watch, 200); return; }
    if (chips.offsetParent !== null) load();
    new MutationObserver(() => soon(check)).observe(chips, {childList: true, subtree: true, characterData: true});
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', watch); else watch();

  // for tests/app/test_browser_tokens_page.py
  window.labTokens = {ready, tokens, panel, read, fixed, loaded: () => data !== null};
})();
