// SPDX-License-Identifier: GPL-2.0-or-later
#include "regions_page.h"

#include <QHeaderView>
#include <QItemSelectionModel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <algorithm>

#include "labels.h"
#include "region_map_widget.h"
#include "region_table_model.h"

namespace ddpscope::gui {
RegionsPage::RegionsPage(QWidget* parent) : QSplitter(Qt::Vertical, parent) {
  model_ = new RegionTableModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(RegionTableModel::SortRole);
  view_ = new QTableView;
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->verticalHeader()->hide();
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->horizontalHeader()->setResizeContentsPrecision(kResizeContentsRows);
  view_->setAccessibleName(tr("Regions"));
  map_ = new RegionMapWidget;
  addWidget(view_);
  addWidget(map_);
  setStretchFactor(0, 2);
  setStretchFactor(1, 3);
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] {
    if (quiet_) return;
    const QModelIndex idx = view_->currentIndex();
    if (idx.isValid()) emit regionChosen(idx.data(RegionTableModel::RegionRole).toInt());
  });
  connect(map_, &RegionMapWidget::rangeClicked, this, &RegionsPage::frameClicked);
}

void RegionsPage::setSnapshot(SnapshotPtr snap) {
  model_->setSnapshot(snap);
  if (!snap || !snap->final) return;
  view_->resizeColumnsToContents();
  const bool any_ulp = std::any_of(snap->regions.begin(), snap->regions.end(),
                                   [](const RegionInfo& r) { return !r.buffer->ulp.empty(); });
  if (any_ulp) view_->sortByColumn(RegionTableModel::ColCommand, Qt::AscendingOrder);
}

void RegionsPage::setRegion(const SnapshotPtr& snap, int region) {
  map_->setRegion(snap, region);
  const QModelIndex src = region >= 0 ? model_->index(region, 0) : QModelIndex();
  const QModelIndex idx = proxy_->mapFromSource(src);
  if (!idx.isValid()) return;
  quiet_ = true;
  view_->selectionModel()->setCurrentIndex(
      idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  quiet_ = false;
  view_->scrollTo(idx);
}

}  // namespace ddpscope::gui
