// KoED Studio's span selector: the dialogue's ko/en turns side by side; a drag marks a
// span, and a small panel beside the selection takes its type (number keys 1-9), its
// English counterpart (a drag in the English turn of the same row, or "no counterpart")
// and Add (Enter). A click on a span selects it: Delete or Backspace removes it. Ctrl+Z
// (Cmd+Z) undoes the last add or removal. A picked span's panel shows its comment and
// takes a new one (Save comment). Every action goes to the server, which checks
// it (offsets inside one turn, a known type) before anything is stored. Texts are placed
// with textContent, never as HTML: dialogue text is data, not markup.
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  // Keep the stylesheet Streamlit placed beside us; replace only our previous drawing.
  parentElement.querySelectorAll(".koed-spans").forEach((old) => old.remove());
  const root = document.createElement("div");
  root.className = "koed-spans";
  root.tabIndex = 0; // the keys reach the widget once a selection or a click focused it
  parentElement.appendChild(root);
  const T = data.texts;
  const types = data.types;
  let chosen = Math.max(0, types.findIndex((t) => t.code === data.last));
  const pend = { ko: null, en: null, none: false };
  let picked = null; // a stored span selected by a click: { key, text, label, comment }
  let sent = 0;
  const segmenter = typeof Intl.Segmenter === "function"
    ? new Intl.Segmenter("ko", { granularity: "grapheme" }) : null;
  const cp = (text, units) => Array.from(text.slice(0, units)).length;
  // Snap a UTF-16 offset out to the nearest whole character (grapheme cluster).
  const snap = (text, units, forward) => {
    if (!segmenter) return units;
    let edge = 0;
    for (const part of segmenter.segment(text)) {
      const end = part.index + part.segment.length;
      if (units <= part.index) return part.index;
      if (units < end) return forward ? end : part.index;
      edge = end;
    }
    return edge;
  };
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  };

  // The legend: each type's colour and the number key that picks it.
  const legend = el("div", "legend");
  types.forEach((t, i) => {
    const item = el("span", "key");
    const swatch = el("span", "swatch");
    swatch.style.background = t.color;
    item.appendChild(swatch);
    item.appendChild(document.createTextNode((i < 9 ? `${i + 1} ` : "") + t.short));
    item.title = t.label;
    legend.appendChild(item);
  });
  legend.appendChild(el("span", "keys", T.keys));
  root.appendChild(legend);

  const table = document.createElement("table");
  const head = document.createElement("tr");
  for (const label of ["", ...data.headers]) head.appendChild(el("th", "", label));
  table.appendChild(head);
  const cells = new Map(); // "lang:position" -> { node, text, marks }
  const fill = (cell, text, marks) => {
    // marks: [{start, end, cls, title, label, comment, color, key}] in code points. Nested spans are drawn
    // inside each other (stacked, brat-like), each its own element, so each can be clicked;
    // a span that crosses another's edge is drawn in pieces that carry the same key.
    const chars = Array.from(text);
    const put = (parent, from, to, list) => {
      let at = from;
      let rest = list.slice().sort((a, b) => a.start - b.start || b.end - a.end);
      while (rest.length) {
        const m = rest.shift();
        if (m.end <= m.start) continue;
        parent.appendChild(document.createTextNode(chars.slice(at, m.start).join("")));
        const inside = [];
        const after = [];
        for (const o of rest) {
          if (o.start >= m.end) after.push(o);
          else if (o.end <= m.end) inside.push(o);
          else {
            inside.push({ ...o, end: m.end });
            after.push({ ...o, start: m.end });
          }
        }
        const mark = el("mark", m.cls, "");
        mark.title = m.title;
        if (m.color) mark.style.background = m.color;
        if (m.key) mark.dataset.key = m.key;
        if (m.label) mark.dataset.label = m.label;
        if (m.comment) {
          mark.dataset.comment = m.comment;
          mark.classList.add("commented");
        }
        if (picked && m.key === picked.key) mark.classList.add("picked");
        if (inside.length) mark.classList.add("outer");
        put(mark, m.start, m.end, inside);
        parent.appendChild(mark);
        at = m.end;
        rest = after.sort((a, b) => a.start - b.start || b.end - a.end);
      }
      parent.appendChild(document.createTextNode(chars.slice(at, to).join("")));
    };
    put(cell, 0, chars.length, marks);
  };
  const draw = () => {
    for (const [id, cell] of cells) {
      const [lang, position] = id.split(":");
      const marks = [...cell.marks];
      const side = pend[lang];
      if (side && String(side.position) === position) {
        marks.push({ start: side.start, end: side.end, cls: "pending", title: T.pending });
      }
      marks.sort((a, b) => a.start - b.start || b.end - a.end);
      cell.node.textContent = "";
      fill(cell.node, cell.text, marks);
    }
  };
  for (const turn of data.turns) {
    const row = document.createElement("tr");
    if (turn.suggested) row.className = "suggested";
    const who = el("td", "who", turn.who);
    if (turn.suggested) who.appendChild(el("span", "hint", turn.suggested));
    row.appendChild(who);
    for (const lang of ["ko", "en"]) {
      const td = el("td", lang);
      const txt = el("div", "txt");
      txt.dataset.lang = lang;
      txt.dataset.position = String(turn.position);
      txt.dataset.text = turn[lang];
      txt.dataset.empty = T.empty;
      cells.set(`${lang}:${turn.position}`, { node: txt, text: turn[lang], marks: turn.marks[lang] });
      td.appendChild(txt);
      row.appendChild(td);
    }
    table.appendChild(row);
  }
  root.appendChild(table);

  // The panel beside the selection.
  const panel = el("div", "panel");
  panel.hidden = true;
  panel.setAttribute("role", "dialog");
  panel.setAttribute("aria-label", T.panel);
  root.appendChild(panel);
  // Below the selection when it fits in the window, else above it; when neither fits,
  // below and scrolled into view. ``rect`` is measured before anything is redrawn.
  const place = (rect) => {
    const box = root.getBoundingClientRect();
    panel.hidden = false;
    const width = panel.offsetWidth || 420;
    const height = panel.offsetHeight;
    const left = Math.min(Math.max(0, rect.left - box.left), Math.max(0, box.width - width));
    const below = rect.bottom + 6 + height <= window.innerHeight;
    const above = rect.top - 6 - height >= 0;
    const top = !below && above ? rect.top - box.top - 6 - height : rect.bottom - box.top + 6;
    panel.style.left = `${left}px`;
    panel.style.top = `${top}px`;
    if (!below && !above) panel.scrollIntoView({ block: "nearest" });
  };
  const close = () => {
    pend.ko = null;
    pend.en = null;
    pend.none = false;
    picked = null;
    panel.hidden = true;
    draw();
  };
  const send = (name, value) => {
    sent += 1;
    setTriggerValue(name, { ...value, n: sent });
  };
  // A status line under the panel's controls: the controls stay, so a refused add (the
  // server says why on the page) can be mended and sent again.
  const status = (text) => {
    let line = panel.querySelector(".status");
    if (!line) {
      line = el("div", "status");
      panel.appendChild(line);
    }
    line.textContent = text;
  };
  const add = () => {
    if (!pend.ko) return;
    if (!pend.en && !pend.none) {
      status(T.needEnglish);
      return;
    }
    send("add", {
      ko: pend.ko,
      en: pend.none ? null : pend.en,
      none: pend.none,
      type: types[chosen].code,
    });
    status(T.adding);
  };
  const remove = () => {
    if (!picked) return;
    send("remove", { key: picked.key });
    status(T.removing);
  };
  const saveComment = () => {
    const box = panel.querySelector("textarea.comment");
    if (!picked || !box) return;
    send("comment", { key: picked.key, comment: box.value });
    status(T.savingComment);
  };
  const button = (label, cls, action, disabled) => {
    const b = el("button", cls, label);
    b.type = "button";
    b.disabled = Boolean(disabled);
    b.addEventListener("mousedown", (ev) => ev.preventDefault()); // keep the focus here
    b.addEventListener("click", (ev) => { ev.stopPropagation(); action(); });
    return b;
  };
  const render = () => {
    panel.textContent = "";
    if (picked) {
      panel.appendChild(el("div", "line", `${picked.text} · ${picked.label}`));
      const label = el("label", "guide", T.comment);
      const box = el("textarea", "comment");
      box.value = picked.comment;
      box.rows = 2;
      box.maxLength = 2000;
      box.setAttribute("aria-label", T.comment);
      box.placeholder = T.commentHint;
      label.appendChild(box);
      panel.appendChild(label);
      const row = el("div", "actions");
      row.appendChild(button(T.saveComment, "", saveComment));
      row.appendChild(button(T.remove, "primary", remove));
      row.appendChild(button(T.cancel, "", close));
      panel.appendChild(row);
      return;
    }
    const ko = pend.ko ? pend.ko.text : T.selectKorean;
    const en = pend.none ? T.noCounterpart : pend.en ? pend.en.text : T.dragEnglish;
    panel.appendChild(el("div", "line ko", `${T.korean}: ${ko}`));
    panel.appendChild(el("div", "line en", `${T.english}: ${en}`));
    const chips = el("div", "chips");
    types.forEach((t, i) => {
      const chip = button((i < 9 ? `${i + 1} ` : "") + t.short, i === chosen ? "chip on" : "chip", () => {
        chosen = i;
        render();
      });
      chip.style.borderColor = t.color;
      chip.title = t.label;
      if (i === chosen) chip.style.background = t.color;
      chip.setAttribute("aria-pressed", i === chosen ? "true" : "false");
      chips.appendChild(chip);
    });
    panel.appendChild(chips);
    if (types[chosen].guide) panel.appendChild(el("div", "guide", types[chosen].guide));
    if (types[chosen].examples) {
      panel.appendChild(el("div", "guide examples", `${T.examples} ${types[chosen].examples}`));
    }
    const none = el("label", "none");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.checked = pend.none;
    box.addEventListener("change", () => {
      pend.none = box.checked;
      if (pend.none) pend.en = null;
      draw();
      render();
    });
    none.appendChild(box);
    none.appendChild(document.createTextNode(" " + T.noCounterpart));
    panel.appendChild(none);
    const row = el("div", "actions");
    row.appendChild(button(T.add, "primary", add, !pend.ko));
    row.appendChild(button(T.cancel, "", close));
    panel.appendChild(row);
  };

  const offset = (node, at, off) => {
    const range = document.createRange();
    range.setStart(node, 0);
    range.setEnd(at, off);
    return range.toString().length;
  };
  root.addEventListener("mouseup", (ev) => {
    if (panel.contains(ev.target)) return;
    const shadow = root.getRootNode();
    const selection = window.getSelection();
    if (!selection || (selection.rangeCount === 0 && !selection.getComposedRanges)) return;
    const ranges = selection.getComposedRanges
      ? selection.getComposedRanges({ shadowRoots: shadow instanceof ShadowRoot ? [shadow] : [] })
      : [selection.getRangeAt(0)];
    const range = ranges[0];
    if (!range || range.collapsed) {
      const mark = ev.target.closest ? ev.target.closest("mark[data-key]") : null;
      if (!mark) return;
      pend.ko = null;
      pend.en = null;
      picked = {
        key: mark.dataset.key,
        text: mark.textContent,
        label: mark.dataset.label || mark.title,
        comment: mark.dataset.comment || "",
      };
      const at = mark.getBoundingClientRect(); // draw() replaces the mark
      draw();
      render();
      place(at);
      root.focus({ preventScroll: true });
      return;
    }
    const holder = (n) => (n.nodeType === 1 ? n : n.parentElement)?.closest?.(".txt");
    const cell = holder(range.startContainer);
    if (!cell) return;
    if (cell !== holder(range.endContainer)) {
      selection.removeAllRanges();
      close();
      send("selected", { error: T.across });
      return;
    }
    const text = cell.dataset.text;
    const s = snap(text, offset(cell, range.startContainer, range.startOffset), false);
    const e = snap(text, offset(cell, range.endContainer, range.endOffset), true);
    if (e <= s) return;
    // A composed range is static (no geometry): measure a live one over the same nodes.
    const live = document.createRange();
    live.setStart(range.startContainer, range.startOffset);
    live.setEnd(range.endContainer, range.endOffset);
    const rects = live.getClientRects();
    const rect = rects.length ? rects[rects.length - 1] : cell.getBoundingClientRect();
    const lang = cell.dataset.lang;
    const side = {
      lang,
      position: Number(cell.dataset.position),
      start: cp(text, s),
      end: cp(text, e),
      text: text.slice(s, e),
    };
    picked = null;
    const movedTurn = !pend[lang] || pend[lang].position !== side.position;
    pend[lang] = side;
    if (lang === "en") pend.none = false;
    // A turn with no English text has no counterpart to drag: ticked for the annotator
    // (and unticked again on a move to a turn that has one).
    const noEnglish = !(cells.get(`en:${side.position}`)?.text || "").trim();
    if (lang === "ko" && (noEnglish || movedTurn)) pend.none = noEnglish;
    const other = pend[lang === "ko" ? "en" : "ko"];
    if (other && other.position !== side.position) pend[lang === "ko" ? "en" : "ko"] = null;
    selection.removeAllRanges();
    draw();
    render();
    place(rect);
    root.focus({ preventScroll: true });
  });
  // Keys work wherever the focus is on the page, except while someone types in a field
  // of the page (a note, a search): a rerun redraws the widget and takes its focus, and
  // Ctrl+Z right after an add must still reach it. One listener per widget at a time.
  const typing = (ev) => {
    const target = ev.composedPath ? ev.composedPath()[0] : ev.target;
    if (!target || !target.closest || panel.contains(target)) return false;
    return Boolean(target.closest("input, textarea, select, [contenteditable='true']"));
  };
  const inComment = (ev) => {
    const target = ev.composedPath ? ev.composedPath()[0] : ev.target;
    return Boolean(target && target.closest && target.closest("textarea.comment"));
  };
  const onKey = (ev) => {
    if (typing(ev)) return;
    if (inComment(ev)) {
      // typing a comment: Backspace edits it and Ctrl+Z undoes typing, never the span
      if (ev.key === "Escape") close();
      return;
    }
    const undo = (ev.ctrlKey || ev.metaKey) && !ev.shiftKey && ev.key.toLowerCase() === "z";
    if (undo) {
      ev.preventDefault();
      close();
      send("undo", {});
      return;
    }
    if (ev.key === "Escape") {
      close();
      return;
    }
    if (picked && (ev.key === "Delete" || ev.key === "Backspace")) {
      ev.preventDefault();
      remove();
      return;
    }
    if (panel.hidden || picked) return;
    if (/^[1-9]$/.test(ev.key) && Number(ev.key) <= types.length) {
      ev.preventDefault();
      chosen = Number(ev.key) - 1;
      render();
    } else if (ev.key === "Enter") {
      ev.preventDefault();
      add();
    }
  };
  if (parentElement.koedKeys) document.removeEventListener("keydown", parentElement.koedKeys);
  parentElement.koedKeys = onKey;
  document.addEventListener("keydown", onKey);
  draw();
  return () => {
    document.removeEventListener("keydown", onKey);
    if (parentElement.koedKeys === onKey) parentElement.koedKeys = null;
  };
}
