/* The ipywidgets HTML manager 1.x typesets widget labels through the MathJax 2 API
   (MathJax.Hub.Queue(["Typeset", MathJax.Hub, element])). The book serves MathJax 3, which has
   no Hub: give it one that hands the element to MathJax 3's typesetPromise. Runs once the
   deferred MathJax script has replaced window.MathJax, before the widgets are drawn (on load). */
(function () {
  function shim() {
    var mj = window.MathJax;
    if (!mj || mj.Hub) return;
    mj.Hub = {
      Queue: function (job) {
        var element = Array.isArray(job) ? job[2] : undefined;
        if (typeof mj.typesetPromise === "function") {
          mj.typesetPromise(element ? [element] : undefined).catch(function (err) {
            console.warn("MathJax could not typeset a widget label:", err);
          });
        }
      }
    };
  }
  document.addEventListener("DOMContentLoaded", shim);
})();
