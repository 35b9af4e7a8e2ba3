/* Where RequireJS places the modules bundled in the ipywidgets HTML manager (embed-amd.js).
   Each bundled module finds its fonts and icons next to its own URL (webpack's public path is
   taken from the module's address), and RequireJS would otherwise address the modules relative
   to the page: lessons/@jupyter-widgets/..., where there is nothing. Mapping every bundled module
   into _static/vendor/html-manager/ makes those files load from the book's own copy.
   Loaded after require.js and before embed-amd.js (book/conf.py, nb_ipywidgets_js). */
(function () {
  var here = document.currentScript.src;
  var dir = here.slice(0, here.lastIndexOf("/") + 1) + "vendor/html-manager/";
  var modules = ["@jupyter-widgets/base", "@jupyter-widgets/base7", "@jupyter-widgets/controls",
                 "@jupyter-widgets/controls7", "@jupyter-widgets/html-manager",
                 "@jupyter-widgets/html-manager/dist/libembed-amd"];
  var paths = {};
  modules.forEach(function (name) { paths[name] = dir + name.replace(/[@\/]/g, "_"); });
  window.require.config({ paths: paths });
})();
