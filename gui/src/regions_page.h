// SPDX-License-Identifier: GPL-2.0-or-later
// The Regions view: the region table (region_table_model.h, sortable) above the region map
// (region_map_widget.h) of the selected region. Choosing a row emits its region; clicking a
// range in the map emits its frame.
#pragma once

#include <QSplitter>

#include "snapshot.h"

class QSortFilterProxyModel;
class QTableView;

namespace ddpscope::gui {

class RegionMapWidget;
class RegionTableModel;

class RegionsPage : public QSplitter {
  Q_OBJECT
 public:
  explicit RegionsPage(QWidget* parent = nullptr);
  // The table; on the final snapshot columns sized to contents and, when an upper layer
  // advertised regions, grouped per ULP in command order.
  void setSnapshot(SnapshotPtr snap);
  // Shows region `region` (row selected, map drawn; no signal).
  void setRegion(const SnapshotPtr& snap, int region);

  RegionTableModel* model() const { return model_; }
  QTableView* view() const { return view_; }
  RegionMapWidget* map() const { return map_; }

 signals:
  void regionChosen(int region);
  void frameClicked(quint64 frame);

 private:
  RegionTableModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* view_ = nullptr;
  RegionMapWidget* map_ = nullptr;
  bool quiet_ = false;
};

}  // namespace ddpscope::gui
