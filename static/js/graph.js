// The Graph page: zoom (wheel, + and − buttons or keys), pan (drag the background) and drag a
// node (its lines follow). The page works without it: every node is a link, and the table lists
// them all.
(function () {
  "use strict";

  var MIN_SCALE = 0.25;
  var MAX_SCALE = 8;
  var STEP = 1.25;
  var CLICK_SLOP = 4; // px a pointer may move and still click

  function setUp(figure) {
    var svg = figure.querySelector("[data-graph-svg]");
    var viewport = figure.querySelector("[data-graph-viewport]");
    var controls = figure.querySelector("[data-graph-controls]");
    if (!svg || !viewport) return;
    var box = svg.viewBox.baseVal;
    var view = { scale: 1, x: 0, y: 0 };
    var drag = null;
    var suppressClick = false;

    function draw() {
      viewport.setAttribute(
        "transform",
        "translate(" + view.x + " " + view.y + ") scale(" + view.scale + ")"
      );
      figure.setAttribute("data-graph-scale", String(Math.round(view.scale * 1000) / 1000));
    }

    // A pointer's place in the SVG's own units (the viewBox), whatever size it is shown at.
    function svgPoint(event) {
      var matrix = svg.getScreenCTM();
      var point = svg.createSVGPoint();
      point.x = event.clientX;
      point.y = event.clientY;
      return matrix ? point.matrixTransform(matrix.inverse()) : point;
    }

    function zoom(factor, around) {
      var scale = Math.min(MAX_SCALE, Math.max(MIN_SCALE, view.scale * factor));
      var ratio = scale / view.scale;
      view.x = around.x - (around.x - view.x) * ratio;
      view.y = around.y - (around.y - view.y) * ratio;
      view.scale = scale;
      draw();
    }

    function centre() {
      return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
    }

    function moveNode(node, x, y) {
      node.setAttribute("transform", "translate(" + x + " " + y + ")");
      node.setAttribute("data-x", x);
      node.setAttribute("data-y", y);
      var id = node.getAttribute("data-node");
      svg.querySelectorAll('line[data-source="' + id + '"]').forEach(function (line) {
        line.setAttribute("x1", x);
        line.setAttribute("y1", y);
      });
      svg.querySelectorAll('line[data-target="' + id + '"]').forEach(function (line) {
        line.setAttribute("x2", x);
        line.setAttribute("y2", y);
      });
    }

    if (controls) {
      controls.hidden = false;
      controls.addEventListener("click", function (event) {
        var button = event.target.closest("[data-graph-zoom]");
        if (!button) return;
        var how = button.getAttribute("data-graph-zoom");
        if (how === "reset") {
          view = { scale: 1, x: 0, y: 0 };
          draw();
        } else {
          zoom(how === "in" ? STEP : 1 / STEP, centre());
        }
      });
    }

    svg.addEventListener("wheel", function (event) {
      event.preventDefault();
      zoom(event.deltaY < 0 ? STEP : 1 / STEP, svgPoint(event));
    }, { passive: false });

    svg.addEventListener("pointerdown", function (event) {
      if (event.button !== 0) return;
      var node = event.target.closest(".graph-node");
      var at = svgPoint(event);
      drag = {
        node: node,
        pointer: event.pointerId,
        startX: event.clientX,
        startY: event.clientY,
        lastX: at.x,
        lastY: at.y,
        moved: false,
      };
      if (!node) svg.classList.add("graph-panning");
    });

    svg.addEventListener("pointermove", function (event) {
      if (!drag || event.pointerId !== drag.pointer) return;
      if (!drag.moved) {
        var far = Math.abs(event.clientX - drag.startX) + Math.abs(event.clientY - drag.startY);
        if (far < CLICK_SLOP) return;
        drag.moved = true;
        svg.setPointerCapture(event.pointerId);
      }
      var at = svgPoint(event);
      if (drag.node) {
        var x = (at.x - view.x) / view.scale;
        var y = (at.y - view.y) / view.scale;
        moveNode(drag.node, Math.round(x * 10) / 10, Math.round(y * 10) / 10);
      } else {
        view.x += at.x - drag.lastX;
        view.y += at.y - drag.lastY;
        draw();
      }
      drag.lastX = at.x;
      drag.lastY = at.y;
    });

    function endDrag(event) {
      if (!drag || event.pointerId !== drag.pointer) return;
      // A node dragged is not a node clicked: the click that ends the drag opens nothing.
      suppressClick = drag.moved && !!drag.node;
      drag = null;
      svg.classList.remove("graph-panning");
    }
    svg.addEventListener("pointerup", endDrag);
    svg.addEventListener("pointercancel", endDrag);

    svg.addEventListener("click", function (event) {
      if (suppressClick) {
        event.preventDefault();
        suppressClick = false;
      }
    }, true);

    figure.addEventListener("keydown", function (event) {
      var node = event.target.closest && event.target.closest(".graph-node");
      if (event.key === "Enter" && node) {
        event.preventDefault();
        window.location.assign(node.getAttribute("href"));
      } else if ((event.key === "+" || event.key === "=") && !event.ctrlKey && !event.metaKey) {
        zoom(STEP, centre());
      } else if (event.key === "-" && !event.ctrlKey && !event.metaKey) {
        zoom(1 / STEP, centre());
      }
    });

    draw();
  }

  document.querySelectorAll("[data-graph]").forEach(setUp);
})();
