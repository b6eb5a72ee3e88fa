// SPDX-License-Identifier: GPL-2.0-or-later
// The keyboard map the zoomable views share: + / = zoom in, - zoom out, arrows pan by a quarter,
// Home / 0 reset. Works for any widget with zoom(factor), pan(fraction) and resetView().
#pragma once

#include <QKeyEvent>

namespace ddpscope::gui {

// Returns false when the key is not one of the view keys (let the widget's base handle it).
template <class View>
bool handleZoomPanKey(View& view, QKeyEvent* ev) {
  switch (ev->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
      view.zoom(2.0);
      break;
    case Qt::Key_Minus:
      view.zoom(0.5);
      break;
    case Qt::Key_Left:
      view.pan(-0.25);
      break;
    case Qt::Key_Right:
      view.pan(0.25);
      break;
    case Qt::Key_Home:
    case Qt::Key_0:
      view.resetView();
      break;
    default:
      return false;
  }
  ev->accept();
  return true;
}

}  // namespace ddpscope::gui
